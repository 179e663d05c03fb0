"""ReadAgent beyond the window, top-down (``overflow=hierarchical``, pagemind's variant past the paper's limit).

The paper's conclusion says the method "does not guarantee good performance when the gist memory itself is
extremely long"; past the window it cannot answer at all. Here, when the look-up prompt with every gist does not
fit, groups of ``group_size`` consecutive gists are gisted again into *parts* (level 1), groups of consecutive
parts into parts of level 2, and so on until the look-up prompt over the top level fits. The model then chooses
parts top-down, with the same decision machinery as the paper's look-up (:func:`..decide.decide`, the same
parsers, bounded re-asks, a recorded fallback): at the top level among all parts, at each level below among the
children of the parts it chose, down to the pages of the chosen level-1 parts, which the mode's own look-up
(ReadAgent-P, -S) or answer (GistMem) then sees exactly as the paper's prompts show them.

Parts are memory items (kind ``part-<group_size>-<level>``), built lazily, at the first question that needs them:
whether a level is needed depends on the window at answer time, not on the memory (one memory serves models run
with any window), so a memory that fits never pays for them and a smaller window adds only the levels it needs.
Each part is stored as it finishes, so a killed question resumes where it stopped and every later question reuses
them; their LLM calls (role ``gist``) are on the trace of the question that made them, so they count in its cost.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ...answering.finish import Context
from ...answering.question import Question
from ...errors import ContextWindowExceeded
from ...llm.base import Constraint, LLMRequest, Message
from ...llm.client import LLM
from ...llm.decide import Invalid, decide
from ...prompts import get_prompt
from ..base import MemoryWriter
from .gist import check_gist
from .memory import GistMemory, Page, ReadAgentOptions
from .parsing import LookupRequest, SequentialStep, parse_lookup, parse_sequential
from .relevance import relevance_order

if TYPE_CHECKING:
    from .lookup import LookupMode


@dataclass(frozen=True)
class Part:
    """The gist of consecutive gists: of pages (level 0 below it) or of parts one level down."""

    level: int  # 0: a page (its own gist); 1: a group of pages; 2: a group of level-1 parts; ...
    index: int  # in narrative order within its level
    first: int  # the first page it covers
    last: int  # the last page it covers
    text: str
    source: str = "llm"  # llm | fallback | single (a group of one keeps its child's gist, no call)


def part_kind(level: int, group_size: int) -> str:
    """The store's item kind of one level's parts (the group size is in it: another size is another level)."""
    return f"part-{group_size}-{level}"


def tagged_parts(parts: list[Part]) -> str:
    """``<Part i>\\n`` + gist blocks, joined by newlines (as the paper's ``<Page i>`` blocks)."""
    return "\n".join(f"<Part {p.index}>\n{p.text}" for p in parts)


def part_request(parts: list[Part], question: Question, opts: ReadAgentOptions,
                 mode: LookupMode[Any]) -> LLMRequest:
    """The look-up request choosing among ``parts``: several for ReadAgent-P and GistMem, one for ReadAgent-S."""
    alternatives = " | ".join(f'"{p.index}"' for p in parts)
    constraint, max_tokens = None, opts.max_tokens
    if mode.chooses_one:
        prompt = get_prompt("readagent", "hierarchy.lookup_sequential").render(
            parts=tagged_parts(parts), question=question.text, options=question.options_block())
        if opts.constrained:
            constraint, max_tokens = Constraint(name="part", gbnf=f'root ::= "Part " ({alternatives})'), 12
    else:
        most = min(opts.max_groups, len(parts))
        prompt = get_prompt("readagent", "hierarchy.lookup_parallel").render(
            parts=tagged_parts(parts), question=question.text, options=question.options_block(), max_parts=most)
        if opts.constrained:
            rep = "".join(f' (", " ({alternatives}))?' for _ in range(most - 1))
            gbnf = f'root ::= "I want to look into Part [" ({alternatives}){rep} "]"'
            constraint = Constraint(name="parts", gbnf=gbnf)
            max_tokens = 16 + 6 * most
    return LLMRequest(messages=(Message("user", prompt),), role="lookup", max_tokens=max_tokens,
                      constraint=constraint)


def _gist_part(level: int, index: int, children: list[Part], llm: LLM, context: Context,
               opts: ReadAgentOptions) -> Part:
    """One part's gist (the paper's gist checks: re-asked once, then the first fifth of each child stands in)."""
    first, last = children[0].first, children[-1].last
    if len(children) == 1:
        return Part(level, index, first, last, children[0].text, "single")
    text = "\n".join(c.text for c in children)
    prompt = get_prompt("readagent", "hierarchy.gist").render(gists=text)
    request = LLMRequest(messages=(Message("user", prompt),), role="gist", max_tokens=opts.max_tokens)
    as_page = Page(index, first, last + 1, text)  # what the gist checks measure
    found = decide(llm, request, lambda reply: check_gist(reply, as_page), context.trace,
                   retries=min(1, opts.max_retries),
                   correction=lambda problem: f"That {problem}. Please shorten the passage again: just give "
                                              "a shortened version, shorter than the passage.",
                   describe=lambda g: f"gist of part {level}.{index} ({len(g.split())} of {as_page.words} words)")
    if found.value is not None:
        return Part(level, index, first, last, found.value)
    kept = " ".join(" ".join(c.text.split()[:max(8, len(c.text.split()) // 5)]) for c in children)
    context.trace.note(f"gist of part {level}.{index} fell back to the first fifth of each of its gists after: "
                       f"{'; '.join(found.problems)}")
    return Part(level, index, first, last, kept, "fallback")


def build_level(level: int, below: list[Part], writer: MemoryWriter, llm: LLM, opts: ReadAgentOptions,
                context: Context) -> tuple[list[Part], int]:
    """Level ``level``'s parts (groups of ``group_size`` consecutive parts of ``below``): the stored ones read,
    the others gisted concurrently and stored as each finishes. Returns (parts, how many were gisted now)."""
    size, kind = opts.group_size, part_kind(level, opts.group_size)
    groups = [below[i:i + size] for i in range(0, len(below), size)]
    parts = {p["index"]: Part(**p) for p in writer.items(kind)}
    todo = [j for j in range(len(groups)) if j not in parts]
    if todo:
        context.phase(f"gisting parts of level {level}", len(parts), len(groups), "part")

        def one(j: int) -> Part:
            part = _gist_part(level, j, groups[j], llm, context, opts)
            writer.put(kind, j, asdict(part))  # stored as each finishes: a kill loses only the parts in flight
            return part

        pool = ThreadPoolExecutor(max_workers=max(1, min(llm.concurrency, len(todo))))
        try:
            for part in pool.map(one, todo):
                parts[part.index] = part
                context.phase(f"gisting parts of level {level}", len(parts), len(groups), "part")
        finally:  # after a failure no new part starts; those in flight finish and are stored
            pool.shutdown(wait=True, cancel_futures=True)
    return [parts[j] for j in range(len(groups))], len(todo)


def _choose(parts: list[Part], question: Question, llm: LLM, opts: ReadAgentOptions, context: Context,
            mode: LookupMode[Any]) -> list[int]:
    """The parts the model chooses (in the order it named them); an unusable reply after the bounded re-asks
    falls back to the part(s) most relevant to the question, recorded."""
    shown = [p.index for p in parts]
    most = 1 if mode.chooses_one else opts.max_groups
    request = part_request(parts, question, opts, mode)
    if mode.chooses_one:
        def parse(reply: str) -> SequentialStep | Invalid:
            step = parse_sequential(reply, shown, frozenset(), noun="part")
            if step.page is None:
                return Invalid("STOP is not offered here" if step.stop else step.problem)
            return step

        one = decide(llm, request, parse, context.trace, retries=opts.max_retries,
                     correction=lambda problem: f'{problem}. Respond with "Part N" for one of the parts shown.',
                     describe=lambda s: f"part {s.page}")
        chosen = [one.value.page] if one.value is not None and one.value.page is not None else []
        problems = one.problems
    else:
        def parse_many(reply: str) -> LookupRequest | Invalid:
            parsed = parse_lookup(reply, shown, most, noun="part")
            return Invalid("; ".join(parsed.problems)) if parsed.empty else parsed

        many = decide(llm, request, parse_many, context.trace, retries=opts.max_retries,
                      correction=lambda problem: 'Please respond only with "I want to look into Part [N, ...]".',
                      describe=lambda p: f"parts {list(p.pages)}")
        chosen = list(many.value.pages) if many.value is not None else []
        problems = many.problems
    if not chosen:
        order = relevance_order([p.text for p in parts], question)
        chosen = [parts[i].index for i in order[:most]]
        context.fallback(f"the choice among {len(parts)} parts of level {parts[0].level} was unusable "
                         f"({problems[-1] if problems else 'no reply'}); took part(s) {chosen}, the most relevant "
                         "to the question (BM25)")
    return chosen


def look_up_top_down(memory: GistMemory, question: Question, llm: LLM, opts: ReadAgentOptions, context: Context,
                     mode: LookupMode[Any], writer: MemoryWriter, details: dict[str, Any]) -> GistMemory:
    """The pages of the parts the model chose top-down, as a view of ``memory`` (narrative order, numbers kept),
    whose look-up prompt fits the window. Adds ``details["hierarchy"]``: levels, parts gisted now, the path."""
    levels: list[list[Part]] = [[Part(0, p.index, p.index, p.index, g.text, g.source)
                                 for p, g in zip(memory.pages, memory.gists)]]
    gisted = 0
    while True:  # add levels until the look-up over the top level fits
        if len(levels[-1]) == 1:
            raise ContextWindowExceeded(
                f"even one part's gist does not fit {llm.model_id}'s {llm.context_window}-token window beside the "
                "look-up prompt (overflow=hierarchical)")
        parts, made = build_level(len(levels), levels[-1], writer, llm, opts, context)
        levels.append(parts)
        gisted += made
        if llm.fits(part_request(parts, question, opts, mode)):
            break
    top = len(levels) - 1
    size = opts.group_size
    shown = levels[top]
    path: list[dict[str, Any]] = []
    for level in range(top, 0, -1):
        chosen = _choose(shown, question, llm, opts, context, mode)
        path.append({"level": level, "shown": len(shown), "chosen": list(chosen)})
        while True:  # the children of the chosen parts, dropping the parts named last while they do not fit
            picked = set(chosen)
            below = [c for c in levels[level - 1] if c.index // size in picked]
            if level > 1:
                request = part_request(below, question, opts, mode)
            else:
                view = memory.restrict(c.index for c in below)
                request = mode.first_request(view, question, opts)
            if llm.fits(request):
                break
            if len(chosen) == 1:
                raise ContextWindowExceeded(
                    f"the {len(below)} gists inside one part do not fit {llm.model_id}'s {llm.context_window}-token "
                    f"window beside the look-up prompt (overflow=hierarchical): lower group_size ({size})")
            dropped = chosen.pop()
            context.fallback(f"part {dropped} of level {level} dropped: the gists inside the chosen parts did not "
                             "fit the context window")
        path[-1]["kept"] = list(chosen)
        shown = below
    view = memory.restrict(c.index for c in shown)
    whole = llm.count_tokens(memory.tagged_gists())
    context.fallback(f"the gist memory ({len(memory.pages)} pages, {whole} tokens) does not fit the "
                     f"{llm.context_window}-token window: looked up top-down through {top} level(s) of part gists, "
                     f"then {len(view.pages)} pages inside the chosen parts (overflow=hierarchical)")
    details["hierarchy"] = {"levels": top, "parts": [len(level) for level in levels[1:]], "parts_gisted": gisted,
                            "path": path}
    return view
