"""The verifier: one short call that reads only an answer's cited sentences and labels its support.

The request shows the cited quotes, the question and the answer (``support.verify`` in ``prompts/support.yaml``) and
takes one of :data:`~pagemind.answering.support.LABELS`, constrained by a grammar or JSON schema where the backend
enforces one. Where the backend returns log-probabilities (llama.cpp's server, vLLM, SGLang, OpenAI), the confidence is
the label's probability among the three, read from the alternatives of the token where the label begins; elsewhere the
label alone (``basis="label"``). A reply outside the labels is re-asked once (:func:`~pagemind.llm.decide.decide`)
and then left without a label (``basis="fallback"``): never read as supported.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..citations import Citation
from ..llm.base import Constraint, LLMRequest, LLMResponse, Message
from .support import LABELS, Label, Verdict

if TYPE_CHECKING:
    from ..llm.client import LLM
    from ..llm.usage import Trace
    from .question import Question

MAX_TOKENS = 12  # a label, or {"label": "..."}
TOP = 5  # alternatives asked per token
_GRAMMAR = 'root ::= "supported" | "partial" | "unsupported"'
_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"label": {"type": "string", "enum": list(LABELS)}},
                           "required": ["label"], "additionalProperties": False}


def request(question: Question | str, answer: str, citations: Sequence[Citation]) -> LLMRequest:
    """The verification request: the cited quotes (numbered as the answer's markers), the question, the answer."""
    from ..prompts import get_prompt

    sources = "\n".join(f"[{n}] {' '.join(c.quote.split())}" for n, c in enumerate(citations, 1))
    asked = question if isinstance(question, str) else question.text
    prompt = get_prompt("support", "verify").render(sources=sources, question=asked, answer=answer)
    return LLMRequest(messages=(Message("user", prompt),), role="verify", max_tokens=MAX_TOKENS,
                      constraint=Constraint("support", gbnf=_GRAMMAR, json_schema=_SCHEMA), logprobs=TOP)


def parse(reply: str) -> Label | str:
    """The label a reply gives, or the problem (str starting with ``"not "``)."""
    text = reply.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text).get("label")
        except (ValueError, AttributeError):
            return "not a label: the reply is not valid JSON"
        text = value if isinstance(value, str) else ""
    found = set(re.findall(r"\b(unsupported|supported|partial)\b", text.lower()))
    if len(found) != 1:
        return ("not a label: none of supported, partial, unsupported" if not found
                else f"not one label: {', '.join(sorted(found))}")
    label = found.pop()
    return next(x for x in LABELS if x == label)


def label_probability(response: LLMResponse, label: str) -> float | None:
    """The probability of ``label`` among the three labels, from the alternatives of the reply token where the label
    begins; None without log-probabilities or when that token cannot be found."""
    if not response.logprobs:
        return None
    at = response.text.lower().find(label)
    if at < 0:
        return None
    seen = 0
    for token in response.logprobs:
        if seen + len(token.token) > at:
            offset = at - seen  # the label may begin inside the token (`"unsupported`)
            mass: dict[str, float] = {}
            for text, logprob in token.top or ((token.token, token.logprob),):
                piece = text[offset:].lower() if len(text) > offset else ""
                matches = [x for x in LABELS if piece and x.startswith(piece.strip())] if piece.strip() else []
                if len(matches) == 1:
                    mass[matches[0]] = mass.get(matches[0], 0.0) + math.exp(logprob)
            total = sum(mass.values())
            if label not in mass:
                return min(1.0, math.exp(token.logprob)) if not token.top else None
            return mass[label] / total
        seen += len(token.token)
    return None


def verify(llm: LLM, question: Question | str, answer: str, citations: Sequence[Citation], trace: Trace,
           retries: int = 1) -> Verdict:
    """The verifier's verdict on ``answer`` given its ``citations`` (no call when nothing is cited: unsupported)."""
    from ..llm.decide import Invalid, decide

    if not citations:
        return Verdict("unsupported", None, "nothing cited", 0, "nothing was cited: no call made")

    def read(reply: str) -> Label | Invalid:
        value = parse(reply)
        return next((x for x in LABELS if x == value), None) or Invalid(value)

    decision = decide(llm, request(question, answer, citations), read, trace, retries=retries,
                      correction=lambda problem: f"{problem}. Reply with exactly one word: supported, partial or "
                                                 "unsupported.")
    spent = sum(e.prompt_tokens + e.completion_tokens for e in trace.events[-decision.calls:]) if decision.calls else 0
    if decision.value is None:
        return Verdict(None, None, "fallback", spent, "; ".join(decision.problems))
    label = next(x for x in LABELS if x == decision.value)
    response = decision.response
    probability = None if response is None else label_probability(response, label)
    return Verdict(label, None if probability is None else round(probability, 4),
                   "logprobs" if probability is not None else "label", spent)


__all__ = ["label_probability", "parse", "request", "verify"]
