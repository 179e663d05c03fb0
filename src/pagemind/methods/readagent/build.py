"""Building (and resuming) a gist memory: pagination, then gists, each unit stored as it finishes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable

from ...llm.base import LLMRequest, Message
from ...llm.client import LLM
from ...llm.usage import Trace
from ...store import Store, memory_key
from ...text import Document, split_paragraphs
from .gist import clean_gist, continued_gist_request, gist_request
from .memory import Gist, GistMemory, Page, ReadAgentOptions
from .paginate import Window, decide, make_window, page_of

METHOD = "readagent"
Progress = Callable[[int, int], None]  # (words done, words total)


def build_memory(
    document: Document,
    llm: LLM,
    store: Store,
    opts: ReadAgentOptions,
    *,
    trace: Trace | None = None,
    progress: Progress | None = None,
) -> GistMemory:
    """Pages and gists for ``document``; reuses what the store has (a finished or half-built memory)."""
    trace = trace if trace is not None else Trace()
    settings = opts.memory_settings()
    key = memory_key(document.id, METHOD, settings, llm.model_id)
    store.put_document(document.id, document.name, document.words, len(document.text))
    record = store.open_memory(key, document.id, METHOD, settings, llm.model_id)
    paragraphs = split_paragraphs(document.text, max_words=max(50, opts.max_words // 2))
    pages = [Page(**p) for p in store.items(key, "page")]
    gists = {g["page"]: Gist(**g) for g in store.items(key, "gist")}
    total = document.words
    if record.status != "complete":
        # Pagination is sequential and holds one request slot; with two or more slots each page's gist starts
        # as soon as the page is decided (on the other slots), so gisting overlaps pagination. With one slot
        # (or continue mode, where the gist follows its pagination turn) everything runs in order.
        pipelined = opts.gist_mode == "separate" and llm.concurrency > 1
        with ThreadPoolExecutor(max_workers=max(1, llm.concurrency - 1)) as pool:
            futures = []
            if pipelined:
                futures = [pool.submit(_gist_one, p, key, llm, store, opts, trace) for p in pages if p.index not in gists]
            _paginate(paragraphs, pages, gists, key, llm, store, opts, trace, progress, total,
                      on_page=(lambda page: futures.append(pool.submit(_gist_one, page, key, llm, store, opts, trace)))
                      if pipelined else None)
            for future in as_completed(futures):
                gist = future.result()
                gists[gist.page] = gist
        _gist_missing(pages, gists, key, llm, store, opts, trace)
        store.mark_complete(key)
    if progress:
        progress(total, total)
    return GistMemory(
        key=key, document_id=document.id, document_words=document.words, pages=tuple(pages),
        gists=tuple(gists[p.index] for p in pages), settings=settings, model=llm.model_id,
    )


FALLBACK_GIST_MIN_WORDS = 30  # an empty gist becomes the page's first fifth (at least this many words)


def _paginate(paragraphs, pages, gists, key, llm, store, opts, trace, progress, total, on_page=None) -> None:
    i = pages[-1].end if pages else 0
    while i < len(paragraphs):
        previous = pages[-1] if pages else None
        window = make_window(paragraphs, i, previous, opts)
        reply, label, source = _ask_pause(window, llm, opts, trace)
        page = page_of(paragraphs, len(pages), i, label, source)
        store.put_item(key, "page", page.index, page.__dict__)
        pages.append(page)
        if on_page is not None:
            on_page(page)
        if opts.gist_mode == "continue" and window.request is not None and reply is not None:
            gist = _gist(page, continued_gist_request(window.request, reply, label, opts), llm, trace)
            store.put_item(key, "gist", page.index, gist.__dict__)
            gists[page.index] = gist
        if progress:
            progress(min(total, sum(p.words for p in pages)), total)
        i = label


def _ask_pause(window: Window, llm: LLM, opts: ReadAgentOptions, trace: Trace) -> tuple[str | None, int, str]:
    """Ask for the pause point, re-asking up to ``max_retries`` times; fall back to the last label."""
    if window.request is None:
        return None, window.last, "tail"
    request = window.request
    problems: list[str] = []
    for attempt in range(opts.max_retries + 1):
        response, event = llm.complete(request, trace)
        label, source, problem = decide(window, response.text)
        if source == "llm":
            trace.decide(event, f"break at <{label}>")
            return response.text, label, "llm"
        problems.append(problem)
        trace.decide(event, f"unparsable ({problem})")
        labels = ", ".join(f"<{n}>" for n in window.labels)
        request = LLMRequest(
            messages=window.request.messages + (
                Message("assistant", response.text),
                Message("user", f"Please answer with one label from {labels} as \"Break point: <N>\"."),
            ),
            role="paginate", max_tokens=window.request.max_tokens, constraint=window.request.constraint,
        )
    trace.note(f"pagination fell back to the last label <{window.last}> after: {'; '.join(problems)}")
    # the continued gist needs a reply that names the label actually used
    return f"Break point: <{window.last}>", window.last, "fallback"


def _gist(page: Page, request: LLMRequest, llm: LLM, trace: Trace) -> Gist:
    """The page's gist; an empty (or preamble-only) reply falls back to the page's beginning, recorded."""
    response, event = llm.complete(request, trace)
    text = clean_gist(response.text)
    if text:
        trace.decide(event, f"gist of page {page.index} ({len(text.split())} of {page.words} words)")
        return Gist(page.index, text)
    words = page.text.split()
    kept = max(FALLBACK_GIST_MIN_WORDS, len(words) // 5)
    trace.decide(event, f"empty gist of page {page.index}: its first {min(kept, len(words))} words used")
    return Gist(page.index, " ".join(words[:kept]), source="fallback")


def _gist_one(page: Page, key: str, llm: LLM, store: Store, opts: ReadAgentOptions, trace: Trace) -> Gist:
    gist = _gist(page, gist_request(page, opts), llm, trace)
    store.put_item(key, "gist", gist.page, gist.__dict__)  # stored as each finishes: a kill loses little
    return gist


def _gist_missing(pages, gists, key, llm: LLM, store: Store, opts, trace) -> None:
    """Gists still missing (continue mode's tail page, or a page whose gist call was cut short)."""
    todo = [p for p in pages if p.index not in gists]
    with ThreadPoolExecutor(max_workers=max(1, min(llm.concurrency, len(todo) or 1))) as pool:
        for gist in pool.map(lambda p: _gist_one(p, key, llm, store, opts, trace), todo):
            gists[gist.page] = gist


def load_memory(document: Document, llm: LLM, store: Store, opts: ReadAgentOptions) -> GistMemory | None:
    """The finished memory for these settings and model, or None."""
    key = memory_key(document.id, METHOD, opts.memory_settings(), llm.model_id)
    record = store.get_memory(key)
    if record is None or record.status != "complete":
        return None
    pages = tuple(Page(**p) for p in store.items(key, "page"))
    gists = {g["page"]: Gist(**g) for g in store.items(key, "gist")}
    return GistMemory(key, document.id, document.words, pages, tuple(gists[p.index] for p in pages),
                      opts.memory_settings(), llm.model_id)
