"""A conversation asked of a document: the last message rewritten into a question that stands alone.

Clients of the OpenAI endpoint send the whole conversation with each request ("Who found the map?", "Wren.",
"Why?"); a method reads one question. :func:`standalone` makes the last message that question, with one LLM call
(``prompts/chat.yaml``, pagemind's own prompt) through the one re-ask primitive, recorded in the answer's trace; the
method's own prompts then read it unchanged. A reply that is no question falls back to the message as it was asked,
and the fallback is recorded — never a silent wrong question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .answering.question import Question
from .limits import MAX_QUESTION
from .llm.base import LLMRequest
from .llm.client import LLM
from .llm.decide import Invalid, decide
from .llm.usage import Trace
from .prompts import get_prompt

ROLES = ("system", "developer", "user", "assistant")
SHOWN = 12_000  # characters of the earlier conversation shown to the rewrite (its latest part)


@dataclass(frozen=True)
class Turn:
    """One earlier message: ``system`` / ``developer`` (instructions), ``user`` or ``assistant``."""

    role: str
    text: str


def needs_rewrite(turns: Sequence[Turn]) -> bool:
    """Whether there is anything before the question that it may depend on."""
    return any(t.text.strip() for t in turns)


def standalone(llm: LLM, question: Question, turns: Sequence[Turn], trace: Trace,
               retries: int = 1) -> tuple[Question, str | None]:
    """(``question`` rewritten to stand alone given ``turns``, the fallback recorded if the rewrite failed)."""
    if not needs_rewrite(turns):
        return question, None
    instructions = "\n".join(t.text.strip() for t in turns if t.role in ("system", "developer") and t.text.strip())
    said = "\n".join(f"{t.role}: {' '.join(t.text.split())}" for t in turns if t.role in ("user", "assistant"))
    prompt = get_prompt("chat", "standalone").render(instructions=instructions, conversation=said[-SHOWN:] or "(none)",
                                                     question=question.text)
    request = LLMRequest.user(prompt, role="rewrite", max_tokens=max(64, min(512, len(question.text) // 2 + 96)))

    def parse(reply: str) -> str | Invalid:
        line = next((x.strip() for x in reply.strip().splitlines() if x.strip()), "")
        for prefix in ("question:", "standalone question:", "rewritten question:"):
            if line.lower().startswith(prefix):
                line = line[len(prefix):].strip()
        line = line.strip('"“”\'')
        if not line:
            return Invalid("an empty reply: write the question on one line")
        if len(line) > MAX_QUESTION:
            return Invalid("too long: one question, on one line")
        return line

    decided = decide(llm, request, parse, trace, retries=retries, describe=lambda q: f"standalone question: {q}")
    if decided.value is None:
        return question, (f"the conversation could not be rewritten into a standalone question "
                          f"({'; '.join(decided.problems)}): the last message was asked as it is")
    return replace(question, text=decided.value), None


__all__ = ["ROLES", "Turn", "needs_rewrite", "standalone"]
