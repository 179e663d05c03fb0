"""Building (and resuming) a gist memory: pagination, then gists, each unit stored as it finishes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable

from ...llm.base import LLMRequest
from ...llm.client import LLM
from ...llm.usage import Trace
from ...text import Document, split_paragraphs
from ..base import Build, MemoryWriter
from ..decide import Invalid, decide
from .gist import check_gist, continued_gist_request, gist_request
from .memory import Gist, Page, ReadAgentOptions
from .paginate import Window, decide_label, make_window, page_of

FALLBACK_GIST_MIN_WORDS = 30  # a gist that fails its checks becomes the page's first fifth (at least this many words)


def build_gist_memory(document: Document, writer: MemoryWriter, build: Build, llm: LLM,
                      opts: ReadAgentOptions) -> None:
    """Pages and gists for ``document``, resuming from what ``writer`` already holds."""
    paragraphs = split_paragraphs(document.text, max_words=max(50, opts.max_words // 2))
    pages = [Page(**p) for p in writer.items("page")]
    gists = {g["page"]: Gist(**g) for g in writer.items("gist")}
    # Pagination is sequential and holds one request slot; with two or more slots each page's gist starts as soon
    # as the page is decided (on the other slots), so gisting overlaps pagination. With one slot (or continue
    # mode, where the gist follows its pagination turn) everything runs in order.
    pipelined = opts.gist_mode == "separate" and llm.concurrency > 1

    def gist_one(page: Page) -> Gist:
        gist = _gist(page, gist_request(page, opts), llm, build.trace, opts)
        writer.put("gist", gist.page, gist.__dict__)  # stored as each finishes: a kill loses little
        return gist

    with ThreadPoolExecutor(max_workers=max(1, llm.concurrency - 1)) as pool:
        futures = [pool.submit(gist_one, p) for p in pages if p.index not in gists] if pipelined else []
        _paginate(paragraphs, pages, gists, writer, llm, opts, build,
                  on_page=(lambda page: futures.append(pool.submit(gist_one, page))) if pipelined else None)
        for future in as_completed(futures):
            gist = future.result()
            gists[gist.page] = gist
            build.phase("writing gists", len(gists), len(pages), "page")
    todo = [p for p in pages if p.index not in gists]  # continue mode's tail page, or a gist cut short
    with ThreadPoolExecutor(max_workers=max(1, min(llm.concurrency, len(todo) or 1))) as pool:
        for gist in pool.map(gist_one, todo):
            gists[gist.page] = gist
            build.phase("writing gists", len(gists), len(pages), "page")


def _paginate(paragraphs: list[str], pages: list[Page], gists: dict[int, Gist], writer: MemoryWriter, llm: LLM,
              opts: ReadAgentOptions, build: Build, on_page: Callable[[Page], None] | None = None) -> None:
    i = pages[-1].end if pages else 0
    done_words = sum(p.words for p in pages)  # a running total: re-counting every page is quadratic
    while i < len(paragraphs):
        previous = pages[-1] if pages else None
        window = make_window(paragraphs, i, previous, opts)
        reply, label, source = _ask_pause(window, llm, opts, build.trace)
        page = page_of(paragraphs, len(pages), i, label, source)
        writer.put("page", page.index, page.__dict__)
        pages.append(page)
        if on_page is not None:
            on_page(page)
        if opts.gist_mode == "continue" and window.request is not None and reply is not None:
            gist = _gist(page, continued_gist_request(window.request, reply, label, opts), llm, build.trace, opts)
            writer.put("gist", page.index, gist.__dict__)
            gists[page.index] = gist
        done_words += page.words
        build.report(done_words, "reading pages")
        i = label


def _ask_pause(window: Window, llm: LLM, opts: ReadAgentOptions, trace: Trace) -> tuple[str | None, int, str]:
    """The pause point (re-asked up to ``max_retries`` times); falls back to the last label, recorded."""
    if window.request is None:
        return None, window.last, "tail"
    labels = ", ".join(f"<{n}>" for n in window.labels)

    def parse(reply: str) -> int | Invalid:
        label, problem = decide_label(window, reply)
        return Invalid(problem) if label is None else label

    found = decide(llm, window.request, parse, trace, retries=opts.max_retries,
                   correction=lambda problem: f"Please answer with one label from {labels} as \"Break point: <N>\".",
                   describe=lambda label: f"break at <{label}>")
    if found.value is not None:
        return found.reply, found.value, "llm"
    trace.note(f"pagination fell back to the last label <{window.last}> after: {'; '.join(found.problems)}")
    # the continued gist needs a reply that names the label actually used
    return f"Break point: <{window.last}>", window.last, "fallback"


def _gist(page: Page, request: LLMRequest, llm: LLM, trace: Trace, opts: ReadAgentOptions) -> Gist:
    """The page's gist. An empty reply, one not shorter than its page or one that repeats itself is re-asked
    once; then the page's first fifth stands in, recorded as a fallback."""
    found = decide(llm, request, lambda reply: check_gist(reply, page), trace, retries=min(1, opts.max_retries),
                   correction=lambda problem: f"That {problem}. Please shorten the passage again: just give "
                                              "a shortened version, shorter than the passage.",
                   describe=lambda text: f"gist of page {page.index} ({len(text.split())} of {page.words} words)")
    if found.value is not None:
        return Gist(page.index, found.value)
    words = page.text.split()
    kept = max(FALLBACK_GIST_MIN_WORDS, len(words) // 5)
    trace.note(f"gist of page {page.index} fell back to its first {min(kept, len(words))} words after: "
               f"{'; '.join(found.problems)}")
    return Gist(page.index, " ".join(words[:kept]), source="fallback")
