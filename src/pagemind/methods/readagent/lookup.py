"""Interactive look-up (paper §3.2): the look-up modes of ReadAgent-P (parallel), ReadAgent-S (sequential) and
GistMem (none), and the answer with the chosen pages expanded.

A mode is one strategy object (:class:`LookupMode`): the request that shows every gist (what must fit the window;
beyond it :func:`fit_gists` and :mod:`.hierarchy` take over), how it chooses pages, and whether the hierarchy
chooses one part per level or several. The reader (:class:`.ReadAgent`) holds its mode; nothing else names it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from ...answering.finish import Context
from ...answering.question import Question
from ...errors import ContextWindowExceeded
from ...llm.base import Constraint, LLMRequest, Message
from ...llm.client import LLM
from ...llm.decide import Invalid, decide
from ...prompts import get_prompt
from ..base import MemoryWriter
from ..reply import answer_request, follow_up_request
from .hierarchy import look_up_top_down
from .memory import GistMemory, LookupOptions, ParallelOptions, ReadAgentOptions
from .parsing import LookupRequest, SequentialStep, parse_lookup, parse_sequential
from .relevance import relevance_order

OptionsT = TypeVar("OptionsT", bound=ReadAgentOptions)


@dataclass(frozen=True)
class LookUp:
    """What a look-up chose: the pages to expand, and the conversation the answer follows (ReadAgent-P with
    ``expand=follow-up``; empty: the pages are expanded in place)."""

    pages: tuple[int, ...] = ()
    conversation: tuple[Message, ...] = ()


class LookupMode(ABC, Generic[OptionsT]):
    """How a ReadAgent method looks up pages before it answers."""

    name: ClassVar[str]
    chooses_one: ClassVar[bool] = False  # beyond the window (overflow=hierarchical): one part per level, or several

    @abstractmethod
    def first_request(self, memory: GistMemory, question: Question, opts: OptionsT) -> LLMRequest:
        """The request that shows every gist ``memory`` holds: what must fit the window."""

    def look_up(self, memory: GistMemory, question: Question, llm: LLM, opts: OptionsT, context: Context) -> LookUp:
        """The pages to expand (none: answer from the gists)."""
        return LookUp()


class Parallel(LookupMode[ParallelOptions]):
    """ReadAgent-P: one request names up to ``max_pages`` pages."""

    name = "parallel"

    def first_request(self, memory: GistMemory, question: Question, opts: ParallelOptions) -> LLMRequest:
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
        return LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=max_tokens,
                          constraint=constraint)

    def look_up(self, memory: GistMemory, question: Question, llm: LLM, opts: ParallelOptions,
                context: Context) -> LookUp:
        shown = [p.index for p in memory.pages]

        def parse(reply: str) -> LookupRequest | Invalid:
            parsed = parse_lookup(reply, shown, opts.max_pages)
            return Invalid("; ".join(parsed.problems)) if parsed.empty else parsed

        found = decide(llm, self.first_request(memory, question, opts), parse, context.trace,
                       retries=opts.max_retries,
                       correction=lambda problem: 'Please respond only with "I want to look up Page [N, ...]".',
                       describe=lambda p: f"pages {list(p.pages)}" + (f" ({'; '.join(p.problems)})" if p.problems
                                                                      else ""))
        follow = found.conversation if opts.expand == "follow-up" else ()
        if found.value is None:
            context.fallback("look-up named no valid page; answered from the gists alone")
            return LookUp((), follow)
        return LookUp(tuple(found.value.pages), follow)


class Sequential(LookupMode[LookupOptions]):
    """ReadAgent-S: one page per step, each step seeing the pages already expanded, until STOP or ``max_pages``."""

    name = "sequential"
    chooses_one = True

    def request(self, memory: GistMemory, question: Question, opts: LookupOptions,
                read: tuple[int, ...] = ()) -> LLMRequest:
        expanded = frozenset(read)
        prompt = get_prompt("readagent", f"{opts.prompt_set}.lookup_sequential").render(
            gists=memory.tagged_gists(expanded), question=question.text, options=question.options_block(),
            past_pages=", ".join(str(p) for p in read) if read else "None",
        )
        constraint = None
        if opts.constrained:
            constraint = Constraint(
                name="sequential", gbnf=f'root ::= "STOP" | "Page " ({_page_alternatives(memory, expanded)})')
        return LLMRequest(messages=(Message("user", prompt),), role="lookup",
                          max_tokens=12 if constraint else opts.max_tokens, constraint=constraint)

    def first_request(self, memory: GistMemory, question: Question, opts: LookupOptions) -> LLMRequest:
        # the first step, with room for a full reply whatever the grammar (what the window must hold)
        prompt = get_prompt("readagent", f"{opts.prompt_set}.lookup_sequential").render(
            gists=memory.tagged_gists(), question=question.text, options=question.options_block(), past_pages="None")
        return LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=opts.max_tokens)

    def look_up(self, memory: GistMemory, question: Question, llm: LLM, opts: LookupOptions,
                context: Context) -> LookUp:
        read: list[int] = []
        while len(read) < min(opts.max_pages, len(memory.pages)):
            expanded = frozenset(read)
            text = memory.expanded_text(expanded)
            if not fits(llm, opts, answer_request(question, text, opts.prompt_set, False), text):
                context.fallback("context full: stopped looking up early")
                break

            def parse(reply: str, expanded: frozenset[int] = expanded) -> SequentialStep | Invalid:
                step = parse_sequential(reply, [p.index for p in memory.pages], expanded)
                return step if step.stop or step.page is not None else Invalid(step.problem)

            found = decide(llm, self.request(memory, question, opts, tuple(read)), parse, context.trace,
                           retries=opts.max_retries,
                           correction=lambda problem: f'{problem}. Respond with "Page N" for a page not read yet, '
                                                      'or "STOP".',
                           describe=lambda s: "STOP" if s.stop else f"page {s.page}")
            if found.value is None:
                context.fallback(f"sequential look-up stopped after an unusable reply ({found.problems[-1]})")
                break
            if found.value.stop or found.value.page is None:
                break
            read.append(found.value.page)
        return LookUp(tuple(read))


class GistsOnly(LookupMode[ReadAgentOptions]):
    """GistMem (the paper's ablation): no look-up; the answer request is the one that shows every gist."""

    name = "gists"

    def first_request(self, memory: GistMemory, question: Question, opts: ReadAgentOptions) -> LLMRequest:
        return answer_request(question, memory.expanded_text(frozenset()), opts.prompt_set, opts.constrained,
                              opts.max_tokens)


def fits(llm: LLM, opts: ReadAgentOptions, request: LLMRequest, text: str) -> bool:
    """The request fits the model's window and its context text the budget."""
    return llm.fits(request) and (opts.budget is None or llm.count_tokens(text) <= opts.budget)


def _page_alternatives(memory: GistMemory, exclude: frozenset[int] = frozenset()) -> str:
    return " | ".join(f'"{p.index}"' for p in memory.pages if p.index not in exclude)


@dataclass(frozen=True)
class Expanded:
    """The answer request with the looked-up pages expanded: the pages kept, and the context text it shows."""

    request: LLMRequest
    kept: tuple[int, ...]
    text: str
    follow_up: bool


def expand(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, context: Context,
           found: LookUp) -> Expanded:
    """The answer request with the pages ``found`` expanded: in place, or after the look-up conversation when it
    carries one (ReadAgent-P, ``expand=follow-up``). Keeps narrative order; drops the pages asked last while the
    context overflows the window or the budget."""
    follow_up = bool(found.conversation)
    kept = list(found.pages)
    while True:
        if follow_up:  # the gists are already in the look-up conversation; the pages follow as the next turn
            shown = "\n".join(f"<Page {i}>\n{memory.page(i).text}" for i in sorted(kept))
            text = memory.tagged_gists() + "\n" + shown
            request = follow_up_request(question, found.conversation, shown, opts.constrained, opts.max_tokens)
        else:
            text = memory.expanded_text(frozenset(kept))
            request = answer_request(question, text, opts.prompt_set, opts.constrained, opts.max_tokens)
        if fits(llm, opts, request, text):
            break
        if not kept:
            if not llm.fits(request):
                raise ContextWindowExceeded(
                    f"even the gist memory ({memory.gist_words} words) does not fit {llm.model_id}'s context window"
                )
            context.fallback(f"the gist memory alone ({llm.count_tokens(text)} tokens) exceeds the budget of "
                             f"{opts.budget} tokens; answered from the gists")
            break
        dropped = kept.pop()
        context.fallback(f"page {dropped} dropped: the expanded memory did not fit the "
                         + ("context window" if not llm.fits(request) else f"budget of {opts.budget} tokens"))
    return Expanded(request, tuple(kept), text, follow_up)


def fit_gists(memory: GistMemory, question: Question, llm: LLM, opts: OptionsT, context: Context,
              mode: LookupMode[OptionsT], writer: MemoryWriter | None = None,
              details: dict[str, Any] | None = None) -> GistMemory:
    """The gists the look-up shows: all of them when they fit the window (exactly the paper); beyond that
    (``overflow=retrieve``, pagemind's variant past the paper's stated limit) the gists most relevant to the
    question — BM25 re-scored with FragRel's context relation, so a page's neighbours count — added in rank order
    while they take at most ``gist_share`` of the window, then shown in narrative order; or
    (``overflow=hierarchical``) the pages of the parts the model chose top-down (:mod:`.hierarchy`, whose part
    gists are stored through ``writer``; ``details`` gets what it did)."""
    if llm.fits(mode.first_request(memory, question, opts)):
        return memory
    whole = llm.count_tokens(memory.tagged_gists())
    if opts.overflow == "refuse":
        raise ContextWindowExceeded(
            f"the gist memory ({len(memory.pages)} pages, {whole} tokens) does not fit {llm.model_id}'s "
            f"{llm.context_window}-token window (overflow=refuse, the paper's limit; overflow=retrieve shows the "
            "gists most relevant to the question, overflow=hierarchical looks them up top-down)")
    if opts.overflow == "hierarchical":
        if writer is None:
            raise ValueError("overflow=hierarchical stores its part gists: fit_gists needs the memory's writer")
        return look_up_top_down(memory, question, llm, opts, context, mode, writer,
                                details if details is not None else {})
    blocks = [f"<Page {p.index}>\n{g.text}" for p, g in zip(memory.pages, memory.gists)]
    costs = llm.backend.count_tokens_many(blocks)
    room = int(llm.context_window * min(opts.gist_share, 0.95))
    chosen: list[int] = []
    used = 0
    for i in relevance_order([g.text for g in memory.gists], question):
        if used + costs[i] + 1 <= room:
            chosen.append(i)
            used += costs[i] + 1
    view = memory.restrict(memory.pages[i].index for i in chosen)
    by_rank = list(chosen)
    while by_rank and not llm.fits(mode.first_request(view, question, opts)):  # the prompt's own words
        by_rank.pop()
        view = memory.restrict(memory.pages[i].index for i in by_rank)
    if not view.pages:
        raise ContextWindowExceeded(f"not even one gist fits {llm.model_id}'s {llm.context_window}-token window "
                                    "beside the look-up prompt")
    context.fallback(f"the gist memory ({len(memory.pages)} pages, {whole} tokens) does not fit the "
                     f"{llm.context_window}-token window: the look-up showed the {len(view.pages)} gists most "
                     f"relevant to the question (overflow=retrieve)")
    return view
