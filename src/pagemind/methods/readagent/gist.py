"""Memory gisting (paper §3.1): each page is shortened independently with the "shorten" prompt."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set

from ...llm.base import LLMRequest, Message
from ...llm.decide import Invalid
from ...prompts import get_prompt
from ...text.words import content_words, share_in
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


GROUNDED = 0.5  # a gist with less of its content words in its page than this, and more in the text around it, is off
MIN_WORDS_FOR_GROUNDING = 8  # content words a gist needs before its grounding is judged


def normal(text: str) -> str:
    """A gist as ``earlier`` holds it: lower case, single spaces."""
    return " ".join(text.lower().split())


def check_gist(reply: str, page: Page, *, around: str = "", earlier: Set[str] = frozenset()) -> str | Invalid:
    """The cleaned gist, or why it is not a faithful shortening: empty, not shorter than its page, or looping;
    and, where the request showed more than the page (a gist continuing the pagination conversation): the gist of
    an earlier page again (``earlier``: the build's gists so far, as :func:`normal` gives them), or a gist about
    other text than its page, i.e. under half of its content words in the page and more of them in ``around``
    (the other text the conversation shows); a gist of fewer than ``MIN_WORDS_FOR_GROUNDING`` content words is
    not judged on these two."""
    text = clean_gist(reply)
    if not text:
        return Invalid("reply was empty")
    words = len(text.split())
    if page.words >= MIN_PAGE_WORDS_FOR_LENGTH_CHECK and words >= page.words:
        return Invalid(f"gist was not shorter than its page ({words} words for {page.words})")
    if repetition(text) > 0.3:
        return Invalid("gist repeats itself")
    content = content_words(text)
    if len(content) < MIN_WORDS_FOR_GROUNDING:  # too short to judge (two pages may well share "A list of names.")
        return text
    if normal(text) in earlier:
        return Invalid("gist repeats the gist of an earlier page")
    if around:
        own, other = share_in(content, page.text), share_in(content, around)
        if own < GROUNDED and other > own:
            return Invalid(f"gist is about other text than its page ({own:.0%} of its words are in the page, "
                           f"{other:.0%} in the text around it)")
    return text
