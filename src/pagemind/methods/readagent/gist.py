"""Memory gisting (paper §3.1): each page is shortened independently with the "shorten" prompt."""

from __future__ import annotations

import re
from collections import Counter

from ...llm.base import LLMRequest, Message
from ...prompts import get_prompt
from ..decide import Invalid
from .memory import Page, ReadAgentOptions


def gist_request(page: Page, opts: ReadAgentOptions) -> LLMRequest:
    prompt = get_prompt("readagent", f"{opts.prompt_set}.gist").render(page=page.text)
    return LLMRequest(messages=(Message("user", prompt),), role="gist", max_tokens=opts.max_tokens)


def continued_gist_request(pagination: LLMRequest, reply: str, label: int, opts: ReadAgentOptions,
                           start: int | None = None) -> LLMRequest:
    """The gist asked as the next turn of the pagination conversation, so the page is not re-read. ``start``: the
    label the page starts at, when the conversation holds earlier pages too (streaming pagination)."""
    if start is None:
        follow_up = get_prompt("readagent", "continue.gist").render(label=label)
    else:
        follow_up = get_prompt("readagent", "continue.gist_page").render(start=start, label=label)
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


MIN_PAGE_WORDS_FOR_LENGTH_CHECK = 40  # a very short page (a tail) may have a gist as long as itself


def repetition(text: str, n: int = 8) -> float:
    """The share of the text's word ``n``-grams that repeat an earlier one (0: none; near 1: one phrase looped)."""
    words = text.lower().split()
    if len(words) < 3 * n:
        return 0.0
    grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    total = sum(grams.values())
    return (total - len(grams)) / total


def check_gist(reply: str, page: Page) -> str | Invalid:
    """The cleaned gist, or why it is not a faithful shortening: empty, not shorter than its page, or looping."""
    text = clean_gist(reply)
    if not text:
        return Invalid("reply was empty")
    words = len(text.split())
    if page.words >= MIN_PAGE_WORDS_FOR_LENGTH_CHECK and words >= page.words:
        return Invalid(f"gist was not shorter than its page ({words} words for {page.words})")
    if repetition(text) > 0.3:
        return Invalid("gist repeats itself")
    return text
