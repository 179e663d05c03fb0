"""The one re-ask primitive every LLM decision goes through.

Send a request, parse the reply into a typed value, and when the reply does not parse re-ask a bounded number of
times (the reply and a short correction appended to the conversation). Every reply's reading is recorded on its
trace event; when no attempt parses, the caller gets ``value=None`` with the problems and records its fallback.
Never a silent guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .base import LLMRequest, LLMResponse, Message
from .client import LLM
from .usage import Trace

T = TypeVar("T")

OK, FAILED, BUDGET = "ok", "failed", "budget"
MAX_RETRIES = 10  # re-asks of one decision: more is never useful (each carries the replies before it)


@dataclass(frozen=True)
class Invalid:
    """A reply that does not parse, and why."""

    problem: str


@dataclass(frozen=True)
class Decision(Generic[T]):
    """The outcome of :func:`decide`."""

    value: T | None  # the parsed value, or None when every attempt failed
    reply: str  # the last reply
    calls: int  # LLM calls made
    problems: tuple[str, ...]  # one per invalid reply, in order
    conversation: tuple[Message, ...]  # the last request's messages and the last reply
    outcome: str = OK  # ok | failed (attempts used up) | budget (``may_call`` said no)
    finish_reason: str = "stop"  # of the last reply ("length": cut by its token limit)
    response: LLMResponse | None = None  # the last reply as the backend gave it (its log-probabilities...)

    @property
    def ok(self) -> bool:
        return self.value is not None


def continued(request: LLMRequest, reply: str, correction: str) -> LLMRequest:
    """``request`` continued by the invalid reply and a correction (same role, reply cap and constraint)."""
    return LLMRequest(messages=request.messages + (Message("assistant", reply), Message("user", correction)),
                      role=request.role, max_tokens=request.max_tokens, constraint=request.constraint,
                      temperature=request.temperature)


def decide(llm: LLM, request: LLMRequest, parse: Callable[[str], T | Invalid], trace: Trace, *,
           retries: int, correction: Callable[[str], str] | None = None,
           retry: Callable[[LLMRequest, str, str], LLMRequest] | None = None,
           describe: Callable[[T], str] = str, may_call: Callable[[int], bool] | None = None,
           truncation: Callable[[str], T | Invalid] | None = None,
           on_text: Callable[[str], None] | None = None) -> Decision[T]:
    """Ask until ``parse`` accepts a reply, at most ``retries + 1`` calls (fewer when a re-ask, which carries the
    replies before it, would not fit the model's window: the decision then fails as when the attempts run out).

    Args:
        parse: the reply's typed value, or :class:`Invalid` with the problem.
        correction: the user turn sent after an invalid reply, given the problem (default: the problem).
        retry: builds the next request from (request, reply, problem) instead of ``correction``.
        describe: how an accepted value reads in the trace.
        truncation: parses a reply cut by its token limit instead of ``parse`` (e.g. drops its cut last line).
        on_text: receives the first reply as it is generated (a re-ask is not streamed).
        may_call: given the calls made so far, checked before every call (a step budget); False ends the
            decision with outcome ``budget``.
    """
    problems: list[str] = []
    reply, finish_reason = "", "stop"
    calls = 0
    conversation = request.messages
    for attempt in range(retries + 1):
        if may_call is not None and not may_call(calls):
            return Decision(None, reply, calls, tuple(problems), conversation, BUDGET, finish_reason)
        response, event = llm.complete(request, trace, on_text=on_text if attempt == 0 else None)
        calls += 1
        reply, finish_reason = response.text, response.finish_reason
        conversation = request.messages + (Message("assistant", reply),)
        parsed = parse(reply) if response.finish_reason != "length" or not truncation else truncation(reply)
        if not isinstance(parsed, Invalid):
            trace.decide(event, describe(parsed))
            return Decision(parsed, reply, calls, tuple(problems), conversation, OK, response.finish_reason, response)
        problems.append(parsed.problem)
        trace.decide(event, f"invalid ({parsed.problem})")
        if attempt < retries:
            following = (retry(request, reply, parsed.problem) if retry is not None
                         else continued(request, reply, correction(parsed.problem) if correction else parsed.problem))
            if not llm.fits(following):  # each re-ask carries the replies before it: stop when the window is full
                problems.append("no room left in the context window to ask again")
                break
            request = following
    return Decision(None, reply, calls, tuple(problems), conversation, FAILED, finish_reason)


__all__ = ["BUDGET", "FAILED", "MAX_RETRIES", "OK", "Decision", "Invalid", "continued", "decide"]
