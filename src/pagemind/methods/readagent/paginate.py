"""Episode pagination (paper §3.1; the notebook's loop). Inherently sequential: each page starts where
the previous one ended (pagemind's chunked variant paginates paragraph-aligned spans independently, each
span's last page ending at the span's end: see ``build.py``).

From paragraph ``i``, paragraphs are added while the word count is under ``max_words``; a numbered
label ``<j>`` is placed before paragraph ``j`` once ``min_words`` are reached, and a final label is
always added. The LLM picks the label where reading naturally pauses. A remainder under
``tail_words`` becomes the last page with no LLM call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...llm.base import Constraint, LLMRequest, Message
from ...prompts import get_prompt
from .memory import Page, ReadAgentOptions
from .parsing import escape_labels, parse_pause_point

REPLY_KEYWORD = {"qmsum": "Label", "narrativeqa": "Breakpoint"}


@dataclass(frozen=True)
class Window:
    """One pagination step: the request to send and the labels it offers."""

    first: int  # paragraph the page starts at
    last: int  # the final label (one past the last paragraph shown)
    labels: tuple[int, ...]
    words: int
    request: LLMRequest | None  # None: the tail rule applies, no LLM call


def make_window(paragraphs: list[str], i: int, previous: Page | None, opts: ReadAgentOptions,
                end: int | None = None) -> Window:
    """The window from paragraph ``i``; pages never cross ``end`` (default: the end of the text)."""
    end = len(paragraphs) if end is None else end
    j, labels, wcount = window_span(paragraphs, i, opts, end)
    if wcount < opts.tail_words and j == end:
        return Window(i, j, labels, wcount, None)
    end_tag = "" if j == end or not opts.lookahead else escape_labels(paragraphs[j]) + "\n..."
    preceding = "...\n" + escape_labels(previous.text) + "\n" if (opts.previous_page and previous) else ""
    prompt = get_prompt("readagent", f"{opts.prompt_set}.paginate").render(
        preceding=preceding, passage=_labelled(paragraphs, i, j, labels), end_tag=end_tag
    )
    return Window(i, j, labels, wcount, _request((Message("user", prompt),), labels, opts))


def window_span(paragraphs: list[str], i: int, opts: ReadAgentOptions, end: int) -> tuple[int, tuple[int, ...], int]:
    """(one past the window's last paragraph, the labels it offers, its words): paragraphs are added while the
    window is under ``max_words``; a label comes before each one once ``min_words`` are reached, and at the end."""
    labels: list[int] = []
    wcount = len(paragraphs[i].split())
    j = i + 1
    while wcount < opts.max_words and j < end:
        wcount += len(paragraphs[j].split())
        if wcount >= opts.min_words:
            labels.append(j)
        j += 1
    labels.append(j)
    return j, tuple(labels), wcount


def _labelled(paragraphs: list[str], first: int, last: int, labels: tuple[int, ...]) -> str:
    """Paragraphs ``first`` .. ``last - 1``, each offered label on a line of its own before its paragraph, then
    the label ``<last>``."""
    offered = set(labels)
    lines: list[str] = []
    for k in range(first, last):
        if k in offered:
            lines.append(f"<{k}>")
        lines.append(escape_labels(paragraphs[k]))
    lines.append(f"<{last}>")
    return "\n".join(lines)


def _request(messages: tuple[Message, ...], labels: tuple[int, ...], opts: ReadAgentOptions) -> LLMRequest:
    constraint = None
    max_tokens = opts.max_tokens
    if opts.constrained:
        alternatives = " | ".join(f'"{n}"' for n in labels)
        keyword = REPLY_KEYWORD.get(opts.prompt_set, "Break point")  # the form each published prompt asks for
        constraint = Constraint(name="pause_point", gbnf=f'root ::= "{keyword}: <" ({alternatives}) ">"')
        max_tokens = 16
    return LLMRequest(messages=messages, role="paginate", max_tokens=max_tokens, constraint=constraint)


@dataclass
class Conversation:
    """Streaming pagination (pagemind's variant): the turns so far of one pagination conversation, the paragraphs
    they have shown (``[.., shown)``, labels included) and their size in tokens."""

    messages: tuple[Message, ...] = ()
    shown: int = 0
    tokens: int = 0

    def add(self, user: Message, reply: str, count: Callable[[str], int]) -> None:
        self.messages += (user, Message("assistant", reply))
        self.tokens += count(user.content) + count(reply)

    def reset(self) -> None:
        self.messages, self.shown, self.tokens = (), 0, 0


def stream_window(paragraphs: list[str], i: int, conversation: Conversation, opts: ReadAgentOptions,
                  end: int, limit: int, count: Callable[[str], int]) -> Window:
    """The window from paragraph ``i`` as the next turn of ``conversation``: only the paragraphs it has not shown
    yet, with their labels. A conversation that would grow past ``limit`` tokens (or has not shown paragraph
    ``i``) starts over with the published first-window prompt."""
    j, labels, wcount = window_span(paragraphs, i, opts, end)
    if wcount < opts.tail_words and j == end:
        return Window(i, j, labels, wcount, None)
    if conversation.messages and conversation.shown > i:
        first_new = max(conversation.shown, i + 1)  # the paragraphs this conversation has not shown
        new = first_new < j
        end_tag = escape_labels(paragraphs[j]) + "\n..." if new and j < end and opts.lookahead else ""
        prompt = get_prompt("readagent", "continue.paginate").render(
            start=i, passage=_labelled(paragraphs, first_new, j, labels) if new else "", end_tag=end_tag,
            labels=", ".join(f"<{n}>" for n in labels), keyword=REPLY_KEYWORD.get(opts.prompt_set, "Break point"))
        if conversation.tokens + count(prompt) + opts.max_tokens <= limit:
            return Window(i, j, labels, wcount, _request(conversation.messages + (Message("user", prompt),),
                                                         labels, opts))
    conversation.reset()
    return make_window(paragraphs, i, None, opts, end)


def decide_label(window: Window, reply: str | None) -> tuple[int | None, str]:
    """Where the page ends: (the offered label the reply names, "") or (None, why not)."""
    pause = parse_pause_point(reply or "", window.first, window.last)
    if pause.label is None:
        return None, pause.problem
    if pause.label not in window.labels:
        return None, f"label <{pause.label}> was not offered"
    return pause.label, ""


def page_of(paragraphs: list[str], index: int, start: int, end: int, source: str) -> Page:
    return Page(index=index, start=start, end=end, text="\n".join(paragraphs[start:end]), label_source=source)
