"""PageIndex's reasoning step: the model reads a document's section titles and picks where the answer is printed.

PageIndex (VectifyAI) answers over a long PDF by showing a model the document's table of contents and letting it
reason to the nodes that hold the answer, instead of ranking passages by their words. Here that step is one
constrained call before retrieval ranks: the titles of the sections the fragments lie in are listed, numbered, with
the question, and the model names at most :data:`MOST` of them. The fragments of the sections picked are read first
(in their rank order), then the rest as ranked. A reply that names no listed section is re-asked (bounded); when
none parses the ranking stands and the fallback is recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..llm.base import Constraint, LLMRequest, Message
from ..llm.client import LLM
from ..llm.decide import Invalid, decide
from ..llm.usage import Trace

MOST = 3  # sections the model may name
TITLES = 400  # titles listed at most (a filing's Items, statements and notes are far fewer)

GRAMMAR = (
    'root ::= "{\\"sections\\": [" num (", " num){0,2} "]}"\n'
    'num ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]'
)
SCHEMA = {"type": "object", "properties": {"sections": {"type": "array", "items": {"type": "integer"},
                                                        "minItems": 1, "maxItems": MOST}},
          "required": ["sections"], "additionalProperties": False}


def titles(labels: Sequence[Sequence[str]]) -> list[str]:
    """The section titles the passages lie in or open (each passage's labels: its section first, then those that
    start inside it), once each, in reading order."""
    return list(dict.fromkeys(label for passage in labels for label in passage if label))[:TITLES]


def request(question: str, listed: Sequence[str], constrained: bool) -> LLMRequest:
    from ..prompts import get_prompt

    shown = "\n".join(_line(i, title) for i, title in enumerate(listed))
    prompt = get_prompt("sections", "pick").render(question=question, titles=shown, most=MOST)
    constraint = Constraint("sections", gbnf=GRAMMAR, json_schema=SCHEMA) if constrained else None
    return LLMRequest(messages=(Message("user", prompt),), role="navigate", max_tokens=40, constraint=constraint)


def _line(number: int, title: str) -> str:
    """A listed title as a contents page prints it: its own words, indented by its depth."""
    path = title.lstrip("§").split(" › ")
    return f"{'  ' * (len(path) - 1)}{number}. {path[-1]}"


def parse(reply: str, count: int) -> list[int] | Invalid:
    """The listed numbers a reply names (``{"sections": [..]}``, possibly fenced, else the numbers on its first
    line), each once, at most :data:`MOST`; :class:`Invalid` when it names none of the ``count`` listed."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", reply.strip())
    numbers: list[int] = []
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            return Invalid('the reply is not valid JSON: reply with {"sections": [numbers]}')
        listed = data.get("sections") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            return Invalid('the JSON has no "sections" list')
        numbers = [n for n in listed if isinstance(n, int) and not isinstance(n, bool)]
    else:
        numbers = [int(n) for n in re.findall(r"\b\d{1,3}\b", body.splitlines()[0] if body else "")]
    kept = list(dict.fromkeys(n for n in numbers if 0 <= n < count))[:MOST]
    if not kept:
        return Invalid(f"name one to {MOST} of the numbers listed (0 to {count - 1})")
    return kept


def pick(llm: LLM, question: str, labels: Sequence[Sequence[str]], trace: Trace, *, constrained: bool,
         retries: int) -> tuple[list[str], str | None]:
    """(the titles the model picked for ``question`` among those of ``labels``, a fallback note or None). No call
    when the passages lie in fewer than two sections (there is nothing to choose)."""
    listed = titles(labels)
    if len(listed) < 2:
        return [], None
    asked = request(question, listed, constrained)
    while len(listed) > 2 and not llm.fits(asked):  # a very long contents list: the first ones that fit
        listed = listed[: len(listed) * 3 // 4]
        asked = request(question, listed, constrained)
    decision = decide(llm, asked, lambda reply: parse(reply, len(listed)), trace, retries=retries,
                      describe=lambda picked: "sections " + ", ".join(map(str, picked)))
    if decision.value is None:
        return [], (f"pick_sections: no section could be read from {decision.calls} replies "
                    f"({'; '.join(decision.problems)[:120]}); the ranking stands")
    return [listed[n] for n in decision.value], None


def picked_first(order: Sequence[int], labels: Sequence[Sequence[str]], picked: Sequence[str]) -> list[int]:
    """``order`` with the passages inside a picked section (or one of its subsections) moved first, each picked
    section's best passage before any's second, then those where one starts; as it is when none lies in one."""
    from ..retrieval.named import first_in

    return first_in(order, labels, [re.compile("^" + re.escape(title) + r"(?:$| ›)") for title in picked])


__all__ = ["MOST", "parse", "pick", "picked_first", "request", "titles"]
