"""Interactive look-up (paper §3.2): ReadAgent-P, ReadAgent-S, and answering from gists alone."""

from __future__ import annotations

from ...errors import ContextWindowExceeded
from ...llm.base import Constraint, LLMRequest, Message
from ...llm.client import LLM
from ...llm.usage import Trace
from ...prompts import get_prompt
from ..answering import answer, answer_request, follow_up_request
from ..question import Answer, Question
from .memory import GistMemory, ReadAgentOptions
from .parsing import parse_lookup, parse_sequential


def _fits(llm: LLM, opts: ReadAgentOptions, request: LLMRequest, text: str) -> bool:
    """The request fits the model's window and its context text the budget."""
    return llm.fits(request) and (opts.budget is None or llm.count_tokens(text) <= opts.budget)


def _page_alternatives(memory: GistMemory, exclude: frozenset[int] = frozenset()) -> str:
    return " | ".join(f'"{p.index}"' for p in memory.pages if p.index not in exclude)


def lookup_parallel(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, trace: Trace,
                    fallbacks: list[str]) -> tuple[list[int], tuple[Message, ...]]:
    """One request for up to ``max_pages`` pages (ReadAgent-P): (pages, the look-up conversation with its reply)."""
    prompt = get_prompt("readagent", f"{opts.prompt_set}.lookup_parallel").render(
        gists=memory.tagged_gists(), question=question.text, options=question.options_block(),
        max_pages=opts.max_pages,
    )
    constraint = None
    max_tokens = opts.max_tokens
    if opts.constrained:
        num = f"({_page_alternatives(memory)})"
        rep = "".join(f' (", " {num})?' for _ in range(min(opts.max_pages, len(memory.pages)) - 1))
        constraint = Constraint(name="lookup", gbnf=f'root ::= "I want to look up Page [" {num}{rep} "]"')
        max_tokens = 16 + 6 * opts.max_pages
    request = LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=max_tokens,
                         constraint=constraint)
    for attempt in range(opts.max_retries + 1):
        response, event = llm.complete(request, trace)
        parsed = parse_lookup(response.text, len(memory.pages), opts.max_pages)
        trace.decide(event, f"pages {list(parsed.pages)}" + (f" ({'; '.join(parsed.problems)})" if parsed.problems else ""))
        conversation = request.messages + (Message("assistant", response.text),)
        if not parsed.empty:
            return list(parsed.pages), conversation
        request = LLMRequest(
            messages=request.messages + (
                Message("assistant", response.text),
                Message("user", 'Please respond only with "I want to look up Page [N, ...]".'),
            ),
            role="lookup", max_tokens=request.max_tokens, constraint=constraint,
        )
    fallbacks.append("look-up named no valid page; answered from the gists alone")
    return [], conversation


def lookup_sequential(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, trace: Trace,
                      fallbacks: list[str]) -> list[int]:
    """One page per step, each seeing the pages already expanded, until STOP or ``max_pages`` (ReadAgent-S)."""
    read: list[int] = []
    template = get_prompt("readagent", f"{opts.prompt_set}.lookup_sequential")
    while len(read) < min(opts.max_pages, len(memory.pages)):
        expanded = frozenset(read)
        prompt = template.render(
            gists=memory.tagged_gists(expanded), question=question.text, options=question.options_block(),
            past_pages=", ".join(str(p) for p in read) if read else "None",
        )
        constraint = None
        if opts.constrained:
            constraint = Constraint(
                name="sequential", gbnf=f'root ::= "STOP" | "Page " ({_page_alternatives(memory, expanded)})'
            )
        request = LLMRequest(messages=(Message("user", prompt),), role="lookup",
                             max_tokens=12 if constraint else opts.max_tokens, constraint=constraint)
        context = memory.expanded_text(expanded)
        if not _fits(llm, opts, answer_request(question, context, opts.prompt_set, False), context):
            fallbacks.append("context full: stopped looking up early")
            break
        step = None
        for attempt in range(opts.max_retries + 1):
            response, event = llm.complete(request, trace)
            step = parse_sequential(response.text, len(memory.pages), expanded)
            trace.decide(event, "STOP" if step.stop else (f"page {step.page}" if step.page is not None else step.problem))
            if step.stop or step.page is not None:
                break
            request = LLMRequest(
                messages=request.messages + (
                    Message("assistant", response.text),
                    Message("user", f'{step.problem}. Respond with "Page N" for a page not read yet, or "STOP".'),
                ),
                role="lookup", max_tokens=request.max_tokens, constraint=constraint,
            )
        if step is None or step.stop:
            break
        if step.page is None:
            fallbacks.append(f"sequential look-up stopped after an unusable reply ({step.problem})")
            break
        read.append(step.page)
    return read


def answer_question(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions,
                    mode: str = "parallel") -> Answer:
    """Answer with ReadAgent-P (``parallel``), ReadAgent-S (``sequential``) or from gists (``gists``)."""
    trace = Trace()
    fallbacks: list[str] = []
    conversation: tuple[Message, ...] = ()
    if mode == "parallel":
        pages, conversation = lookup_parallel(memory, question, llm, opts, trace, fallbacks)
    elif mode == "sequential":
        pages = lookup_sequential(memory, question, llm, opts, trace, fallbacks)
    elif mode == "gists":
        pages = []
    else:
        raise ValueError(f"unknown look-up mode {mode!r}")
    # Keep narrative order in the context; drop the least important pages (asked last) if it overflows the
    # window or the budget.
    follow_up = opts.expand == "follow-up" and mode == "parallel"
    kept = list(pages)
    while True:
        if follow_up:  # the gists are already in the look-up conversation; the pages follow as the next turn
            shown = "\n".join(f"<Page {i}>\n{memory.pages[i].text}" for i in sorted(kept))
            text = memory.tagged_gists() + "\n" + shown
            request = follow_up_request(question, conversation, shown, opts.constrained, opts.max_tokens)
        else:
            text = memory.expanded_text(frozenset(kept))
            request = answer_request(question, text, opts.prompt_set, opts.constrained, opts.max_tokens)
        if _fits(llm, opts, request, text):
            break
        if not kept:
            if not llm.fits(request):
                raise ContextWindowExceeded(
                    f"even the gist memory ({memory.gist_words} words) does not fit {llm.model_id}'s context window"
                )
            fallbacks.append(f"the gist memory alone ({llm.count_tokens(text)} tokens) exceeds the budget of "
                             f"{opts.budget} tokens; answered from the gists")
            break
        dropped = kept.pop()
        fallbacks.append(f"page {dropped} dropped: the expanded memory did not fit the "
                         + ("context window" if not llm.fits(request) else f"budget of {opts.budget} tokens"))
    reply = answer(llm, question, request, trace, opts.max_retries)
    context_words = max(len(text.split()), memory.gist_words)
    return Answer(
        question=question, method={"parallel": "readagent-p", "sequential": "readagent-s", "gists": "gistmem"}[mode],
        text=reply.text, choice=reply.choice, pages_read=kept,
        compression_rate=100.0 * (1 - context_words / max(1, memory.document_words)),
        context_words=context_words, trace=trace, fallbacks=fallbacks + reply.fallbacks,
        details={"requested_pages": pages, "pages": len(memory.pages), "expand": "follow-up" if follow_up else "in-place"},
    )
