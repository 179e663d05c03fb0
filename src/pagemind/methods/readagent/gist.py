"""Memory gisting (paper §3.1): each page is shortened independently with the "shorten" prompt."""

from __future__ import annotations

import re

from ...llm.base import LLMRequest, Message
from ...prompts import get_prompt
from .memory import Page, ReadAgentOptions


def gist_request(page: Page, opts: ReadAgentOptions) -> LLMRequest:
    prompt = get_prompt("readagent", f"{opts.prompt_set}.gist").render(page=page.text)
    return LLMRequest(messages=(Message("user", prompt),), role="gist", max_tokens=opts.max_tokens)


def continued_gist_request(pagination: LLMRequest, reply: str, label: int, opts: ReadAgentOptions) -> LLMRequest:
    """The gist asked as the next turn of the pagination conversation, so the page is not re-read."""
    follow_up = get_prompt("readagent", "continue.gist").render(label=label)
    messages = pagination.messages + (Message("assistant", reply), Message("user", follow_up))
    return LLMRequest(messages=messages, role="gist", max_tokens=opts.max_tokens)


_PREAMBLE = re.compile(
    r"^\s*(?:\**\s*(?:here(?:'s| is) (?:a |the )?(?:shortened|shorter|condensed)[^\n:]*|shortened (?:version|passage))"
    r"\s*[:：]?\s*\**\s*\n?)",
    re.IGNORECASE,
)


def clean_gist(reply: str) -> str:
    """Strip a chatty preamble ("Here is a shortened version:") that models add despite the prompt."""
    return _PREAMBLE.sub("", reply.strip(), count=1).strip()
