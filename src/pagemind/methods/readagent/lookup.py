"""Interactive look-up (paper §3.2): ReadAgent-P, ReadAgent-S, and answering from gists alone."""

from __future__ import annotations

from ...errors import ContextWindowExceeded
from ...llm.base import Constraint, LLMRequest, Message
from ...llm.client import LLM
from ..answering import Reply, answer, answer_request, follow_up_request
from ..base import Context, MemoryWriter
from ..decide import Invalid, decide
from ..question import Question
from ...prompts import get_prompt
from .hierarchy import look_up_top_down
from .memory import GistMemory, LookupOptions, ParallelOptions, ReadAgentOptions
from .parsing import LookupRequest, SequentialStep, parse_lookup, parse_sequential


def fits(llm: LLM, opts: ReadAgentOptions, request: LLMRequest, text: str) -> bool:
    """The request fits the model's window and its context text the budget."""
    return llm.fits(request) and (opts.budget is None or llm.count_tokens(text) <= opts.budget)


def _page_alternatives(memory: GistMemory, exclude: frozenset[int] = frozenset()) -> str:
    return " | ".join(f'"{p.index}"' for p in memory.pages if p.index not in exclude)


def parallel_request(memory: GistMemory, question: Question, opts: ReadAgentOptions) -> LLMRequest:
    """ReadAgent-P's look-up request over the gists ``memory`` shows."""
    max_pages = getattr(opts, "max_pages", 5)
    prompt = get_prompt("readagent", f"{opts.prompt_set}.lookup_parallel").render(
        gists=memory.tagged_gists(), question=question.text, options=question.options_block(),
        max_pages=max_pages,
    )
    constraint = None
    max_tokens = opts.max_tokens
    if opts.constrained:
        num = f"({_page_alternatives(memory)})"
        rep = "".join(f' (", " {num})?' for _ in range(min(max_pages, len(memory.pages)) - 1))
        constraint = Constraint(name="lookup", gbnf=f'root ::= "I want to look up Page [" {num}{rep} "]"')
        max_tokens = 16 + 6 * max_pages
    return LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=max_tokens,
                      constraint=constraint)


def lookup_parallel(memory: GistMemory, question: Question, llm: LLM, opts: ParallelOptions,
                    context: Context) -> tuple[list[int], tuple[Message, ...]]:
    """One request for up to ``max_pages`` pages (ReadAgent-P): (pages, the look-up conversation with its reply)."""
    request = parallel_request(memory, question, opts)
    shown = [p.index for p in memory.pages]

    def parse(reply: str) -> LookupRequest | Invalid:
        parsed = parse_lookup(reply, shown, opts.max_pages)
        return Invalid("; ".join(parsed.problems)) if parsed.empty else parsed

    found = decide(llm, request, parse, context.trace, retries=opts.max_retries,
                   correction=lambda problem: 'Please respond only with "I want to look up Page [N, ...]".',
                   describe=lambda p: f"pages {list(p.pages)}" + (f" ({'; '.join(p.problems)})" if p.problems else ""))
    if found.value is None:
        context.fallback("look-up named no valid page; answered from the gists alone")
        return [], found.conversation
    return list(found.value.pages), found.conversation


def lookup_sequential(memory: GistMemory, question: Question, llm: LLM, opts: LookupOptions,
                      context: Context) -> list[int]:
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
        text = memory.expanded_text(expanded)
        if not fits(llm, opts, answer_request(question, text, opts.prompt_set, False), text):
            context.fallback("context full: stopped looking up early")
            break

        def parse(reply: str, expanded: frozenset[int] = expanded) -> SequentialStep | Invalid:
            step = parse_sequential(reply, [p.index for p in memory.pages], expanded)
            return step if step.stop or step.page is not None else Invalid(step.problem)

        found = decide(llm, request, parse, context.trace, retries=opts.max_retries,
                       correction=lambda problem: f'{problem}. Respond with "Page N" for a page not read yet, or "STOP".',
                       describe=lambda s: "STOP" if s.stop else f"page {s.page}")
        if found.value is None:
            context.fallback(f"sequential look-up stopped after an unusable reply ({found.problems[-1]})")
            break
        if found.value.stop or found.value.page is None:
            break
        read.append(found.value.page)
    return read


def answer_from(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, context: Context,
                pages: list[int], conversation: tuple[Message, ...] = ()) -> tuple[Reply, list[int], str, bool]:
    """Answer with ``pages`` expanded (in place, or after ``conversation`` when ReadAgent-P expands as a
    follow-up). Keeps narrative order; drops the pages asked last while the context overflows the window or the
    budget. Returns (reply, pages kept, the context text, follow-up used)."""
    follow_up = bool(conversation) and isinstance(opts, ParallelOptions) and opts.expand == "follow-up"
    kept = list(pages)
    while True:
        if follow_up:  # the gists are already in the look-up conversation; the pages follow as the next turn
            shown = "\n".join(f"<Page {i}>\n{memory.page(i).text}" for i in sorted(kept))
            text = memory.tagged_gists() + "\n" + shown
            request = follow_up_request(question, conversation, shown, opts.constrained, opts.max_tokens)
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
    reply = answer(llm, question, request, context.trace, opts.max_retries, context.on_text)
    for note in reply.fallbacks:
        context.fallback(note)
    return reply, kept, text, follow_up


def first_request(memory: GistMemory, question: Question, opts: ReadAgentOptions, mode: str) -> LLMRequest:
    """The request that shows every gist ``memory`` holds: the look-up (P, S) or the answer (GistMem)."""
    if mode == "parallel":
        return parallel_request(memory, question, opts)
    if mode == "sequential":
        prompt = get_prompt("readagent", f"{opts.prompt_set}.lookup_sequential").render(
            gists=memory.tagged_gists(), question=question.text, options=question.options_block(), past_pages="None")
        return LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=opts.max_tokens)
    return answer_request(question, memory.expanded_text(frozenset()), opts.prompt_set, opts.constrained,
                          opts.max_tokens)


def relevance_order(texts: list[str], question: Question) -> list[int]:
    """Positions of ``texts``, most relevant to the question first: BM25 re-scored with FragRel's context
    relation, so a text's neighbours count."""
    from ...retrieval.fragments import Fragment
    from ...retrieval.index import FragmentIndex, RetrievalSettings

    index = FragmentIndex([Fragment(i, text, i) for i, text in enumerate(texts)],
                          RetrievalSettings(scorer="bm25", fragrel=True, relation="context"))
    query = question.text + ("\n" + "\n".join(question.options) if question.is_choice else "")
    return [int(i) for i in index.rank(query).order]


def fit_gists(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, context: Context,
              mode: str, writer: MemoryWriter | None = None, details: dict | None = None) -> GistMemory:
    """The gists the look-up shows: all of them when they fit the window (exactly the paper); beyond that
    (``overflow=retrieve``, pagemind's variant past the paper's stated limit) the gists most relevant to the
    question — BM25 re-scored with FragRel's context relation, so a page's neighbours count — added in rank order
    while they take at most ``gist_share`` of the window, then shown in narrative order; or
    (``overflow=hierarchical``) the pages of the parts the model chose top-down (:mod:`.hierarchy`, whose part
    gists are stored through ``writer``; ``details`` gets what it did)."""
    if llm.fits(first_request(memory, question, opts, mode)):
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
    while by_rank and not llm.fits(first_request(view, question, opts, mode)):  # the prompt's own words
        by_rank.pop()
        view = memory.restrict(memory.pages[i].index for i in by_rank)
    if not view.pages:
        raise ContextWindowExceeded(f"not even one gist fits {llm.model_id}'s {llm.context_window}-token window "
                                    "beside the look-up prompt")
    context.fallback(f"the gist memory ({len(memory.pages)} pages, {whole} tokens) does not fit the "
                     f"{llm.context_window}-token window: the look-up showed the {len(view.pages)} gists most "
                     f"relevant to the question (overflow=retrieve)")
    return view
