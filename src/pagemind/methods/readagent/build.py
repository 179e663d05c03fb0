"""Building (and resuming) a gist memory: pagination, then gists, each unit stored as it finishes.

Pagination is the paper's (sequential: each page starts where the previous one ended) or pagemind's chunked
variant: the paragraphs cut into spans of about ``chunk_words`` words, each span paginated on its own (its last
page ends at the span's end), all spans at once, so one long document fills every request slot. Chunked pages
are stored as drafts keyed by their first paragraph (their global numbers are known only when every span
before them is done) and numbered when the last span finishes; the spans are stored as items of kind
``chunk`` (``pages`` set once the span is paginated), so a resumed build continues each span where it stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace

from ...llm.base import LLMRequest
from ...llm.client import LLM
from ...llm.decide import Invalid, decide
from ...llm.usage import Trace
from ...text import Document, split_paragraphs
from ..base import Build, MemoryWriter
from .gist import check_gist, continued_gist_request, gist_request, normal
from .memory import Gist, Page, ReadAgentOptions
from .paginate import Conversation, Window, decide_label, make_window, page_of, stream_window

FALLBACK_GIST_MIN_WORDS = 30  # a gist that fails its checks becomes the page's first fifth (at least this many words)
DRAFT_PAGE, DRAFT_GIST = "draft-page", "draft-gist"  # chunked pagination: pages and gists before they are numbered


@dataclass(frozen=True)
class Chunk:
    """A span of paragraphs paginated on its own (chunked pagination)."""

    index: int
    start: int  # first paragraph
    end: int  # one past the last paragraph
    pages: int | None = None  # set once every page of the span is stored


def build_gist_memory(document: Document, writer: MemoryWriter, build: Build, llm: LLM,
                      opts: ReadAgentOptions) -> None:
    """Pages and gists for ``document``, resuming from what ``writer`` already holds."""
    paragraphs = split_paragraphs(document.text, max_words=max(50, opts.max_words // 2))
    if opts.pagination == "chunked":
        paginate_chunked(paragraphs, writer, build, llm, opts)  # every page stored; most gists too
    pages = [Page(**p) for p in writer.items("page")]
    gists = {g["page"]: Gist(**g) for g in writer.items("gist")}
    # Sequential pagination holds one request slot; with two or more slots each page's gist starts as soon as the
    # page is decided (on the other slots), so gisting overlaps pagination. With one slot (or continue mode, where
    # the gist follows its pagination turn) everything runs in order. After chunked pagination (which gists as it
    # goes) only gists it left undone remain.
    pipelined = opts.gist_mode == "separate" and llm.concurrency > 1
    spans = section_spans(document, paragraphs, opts.min_words) if opts.pagination == "sections" else None

    def gist_one(page: Page) -> Gist:
        gist = _gist(page, gist_request(page, opts), llm, build.trace, opts)
        writer.put("gist", gist.page, gist.__dict__)  # stored as each finishes: a kill loses little
        return gist

    with ThreadPoolExecutor(max_workers=max(1, llm.concurrency - 1)) as pool:
        futures = [pool.submit(gist_one, p) for p in pages if p.index not in gists] if pipelined else []
        _paginate(paragraphs, pages, gists, writer, llm, opts, build,
                  on_page=(lambda page: futures.append(pool.submit(gist_one, page))) if pipelined else None,
                  spans=spans)
        for future in as_completed(futures):
            gist = future.result()
            gists[gist.page] = gist
            build.phase("writing gists", len(gists), len(pages), "page")
    todo = [p for p in pages if p.index not in gists]  # continue mode's tail page, or a gist cut short
    with ThreadPoolExecutor(max_workers=max(1, min(llm.concurrency, len(todo) or 1))) as pool:
        for gist in pool.map(gist_one, todo):
            gists[gist.page] = gist
            build.phase("writing gists", len(gists), len(pages), "page")


def section_spans(document: Document, paragraphs: list[str], min_words: int) -> list[tuple[int, int]] | None:
    """The paragraph spans of the document's sections (``pagination=sections``), in order: a span runs from one
    section's first paragraph to the next section's; a section of fewer than ``min_words`` words joins the one
    after it. None for a document without sections (the paper's pagination)."""
    from bisect import bisect_left

    from ...citations import locate

    if not getattr(document, "sections", ()):
        return None
    starts, at = [], 0
    for paragraph in paragraphs:
        span = locate(document.text, paragraph[:200], at)
        starts.append(span[0] if span else at)
        at = span[1] if span else at
    cuts = sorted({bisect_left(starts, s.start) for s in document.sections} - {0}) + [len(paragraphs)]
    spans: list[tuple[int, int]] = []
    lo = 0
    for cut in cuts:
        if cut <= lo or (cut < len(paragraphs) and sum(len(p.split()) for p in paragraphs[lo:cut]) < min_words):
            continue
        spans.append((lo, cut))
        lo = cut
    return spans


def _paginate(paragraphs: list[str], pages: list[Page], gists: dict[int, Gist], writer: MemoryWriter, llm: LLM,
              opts: ReadAgentOptions, build: Build, on_page: Callable[[Page], None] | None = None,
              spans: list[tuple[int, int]] | None = None) -> None:
    done_words = sum(p.words for p in pages)  # a running total: re-counting every page is quadratic

    def store(page: Page) -> None:
        writer.put("page", page.index, page.__dict__)

    def stored(page: Page, gist: Gist | None) -> None:
        nonlocal done_words
        if gist is not None:
            writer.put("gist", gist.page, gist.__dict__)
            gists[gist.page] = gist
        elif on_page is not None:
            on_page(page)
        done_words += page.words
        build.report(done_words, "reading pages")

    # sections: each paginated on its own, in order; a section's end is a pause the model need not find, so what is
    # left of a section within a page's length is that page with no LLM call
    within = opts if spans is None else replace(opts, tail_words=max(opts.tail_words, opts.max_words + 1))
    for start, end in spans or [(0, len(paragraphs))]:
        _paginate_span(paragraphs, start, end, pages, llm, within, build.trace, store, stored, draft=False)


def _paginate_span(paragraphs: list[str], start: int, end: int, pages: list[Page], llm: LLM, opts: ReadAgentOptions,
                   trace: Trace, store: Callable[[Page], None], stored: Callable[[Page, Gist | None], None],
                   draft: bool, stop: threading.Event | None = None) -> None:
    """Pages from where ``pages`` ends (else ``start``) up to paragraph ``end``, appended to ``pages``. Each page
    goes to ``store`` as soon as it is decided, then (with its continued gist in continue mode) to ``stored``.
    A draft page is numbered by its first paragraph, a final one by its place in ``pages``."""
    i = pages[-1].end if pages else start
    # streaming pagination: one conversation, each turn showing only text not shown yet (a resumed build starts
    # a new one); it starts over when it would hold more than stream_share of the window
    conversation = Conversation() if opts.pagination == "streaming" else None
    limit = int(llm.context_window * opts.stream_share)
    earlier: set[str] = set()  # the continued gists so far (a small model may give one again for another page)
    opened = i  # the first paragraph the pagination conversation shows
    while i < end and not (stop is not None and stop.is_set()):
        previous = pages[-1] if pages else None
        if conversation is not None:
            window = stream_window(paragraphs, i, conversation, opts, end, limit, llm.count_tokens)
            if not conversation.messages:  # a new conversation begins with this page
                opened = i
        else:
            window = make_window(paragraphs, i, previous, opts, end)
            opened = previous.start if previous is not None and opts.previous_page else i
        reply, label, source = _ask_pause(window, llm, opts, trace)
        page = page_of(paragraphs, i if draft else len(pages), i, label, source)
        store(page)
        pages.append(page)
        if conversation is not None and window.request is not None and reply is not None:
            conversation.add(window.request.messages[-1], reply, llm.count_tokens)
            conversation.shown = window.last
        gist = None
        if opts.gist_mode == "continue" and window.request is not None and reply is not None:
            continued = len(window.request.messages) > 1  # a streaming turn: earlier pages are in the conversation
            request = continued_gist_request(window.request, reply, label, opts, start=i if continued else None)
            # what else the conversation shows: the text before the page (earlier turns, or the previous page the
            # prompt shows) and after the break (the rest of the window, the look-ahead paragraph)
            shown = min(end, max(window.last + 1, conversation.shown if conversation else 0))
            around = "\n\n".join(paragraphs[opened:i] + paragraphs[label:shown])
            gist = _gist(page, request, llm, trace, opts, around=around, earlier=earlier)
            earlier.add(normal(gist.text))
            if conversation is not None:
                conversation.add(request.messages[-1], gist.text, llm.count_tokens)
        stored(page, gist)
        i = label


def plan_chunks(paragraphs: list[str], chunk_words: int) -> list[Chunk]:
    """Consecutive spans of whole paragraphs of at least ``chunk_words`` words; a last span under half that joins
    the one before."""
    bounds: list[tuple[int, int]] = []
    start = words = 0
    for j, paragraph in enumerate(paragraphs):
        words += len(paragraph.split())
        if words >= chunk_words:
            bounds.append((start, j + 1))
            start, words = j + 1, 0
    if start < len(paragraphs):
        if bounds and words < chunk_words / 2:
            bounds[-1] = (bounds[-1][0], len(paragraphs))
        else:
            bounds.append((start, len(paragraphs)))
    return [Chunk(n, s, e) for n, (s, e) in enumerate(bounds)]


def paginate_chunked(paragraphs: list[str], writer: MemoryWriter, build: Build, llm: LLM,
                     opts: ReadAgentOptions) -> None:
    """Chunked pagination: every span paginated at once (with their gists, on the same request slots), then the
    pages numbered in order and stored as ``page`` items with their gists. Resumes from the stored drafts."""
    if writer.items("page"):  # numbered already (pages are written in one transaction, after their gists)
        _drop_drafts(writer)
        return
    chunks = [Chunk(**c) for c in writer.items("chunk")]
    if not chunks:
        chunks = plan_chunks(paragraphs, opts.chunk_words)
        writer.put_many("chunk", [(c.index, asdict(c)) for c in chunks])
    drafts = {p["start"]: Page(**p) for p in writer.items(DRAFT_PAGE)}
    draft_gists = {g["page"]: Gist(**g) for g in writer.items(DRAFT_GIST)}
    spans: list[list[Page]] = [[] for _ in chunks]
    n = 0
    for start in sorted(drafts):  # drafts in narrative order, each to its span
        while chunks[n].end <= start:
            n += 1
        spans[n].append(drafts[start])
    lock = threading.Lock()
    stop = threading.Event()
    done_words = sum(p.words for p in drafts.values())  # a running total
    pipelined = opts.gist_mode == "separate" and llm.concurrency > 1
    gist_futures: list[Future] = []

    def gist_draft(page: Page) -> None:
        gist = _gist(page, gist_request(page, opts), llm, build.trace, opts)
        writer.put(DRAFT_GIST, page.start, gist.__dict__)
        with lock:
            draft_gists[page.start] = gist

    def store(page: Page) -> None:
        writer.put(DRAFT_PAGE, page.start, page.__dict__)

    def stored(page: Page, gist: Gist | None) -> None:
        nonlocal done_words
        if gist is not None:
            writer.put(DRAFT_GIST, page.start, gist.__dict__)
        with lock:
            drafts[page.start] = page
            if gist is not None:
                draft_gists[page.start] = gist
            elif pipelined and not stop.is_set():
                gist_futures.append(gisting.submit(gist_draft, page))
            done_words += page.words
            build.report(done_words, "reading pages")

    def paginate(chunk: Chunk) -> None:
        _paginate_span(paragraphs, chunk.start, chunk.end, spans[chunk.index], llm, opts, build.trace, store,
                       stored, draft=True, stop=stop)
        if not stop.is_set():
            writer.put("chunk", chunk.index, asdict(replace(chunk, pages=len(spans[chunk.index]))))

    def watch(future: Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            stop.set()  # no span starts a new page after a failure

    todo = [c for c in chunks if c.pages is None]
    readers = ThreadPoolExecutor(max_workers=max(1, min(llm.concurrency, len(todo))))
    gisting = ThreadPoolExecutor(max_workers=llm.concurrency)  # the client's slots bound the requests in flight
    try:
        if pipelined:  # drafts of an earlier attempt that have no gist yet
            with lock:
                gist_futures.extend(gisting.submit(gist_draft, p) for s, p in sorted(drafts.items())
                                    if s not in draft_gists)
        reading = [readers.submit(paginate, c) for c in todo]
        for future in reading:
            future.add_done_callback(watch)
        for future in reading:
            future.result()  # the first failure, once every span has stopped
        readers.shutdown(wait=True)  # no gist is submitted after this
        for future in gist_futures:
            future.add_done_callback(watch)
        for future in as_completed(gist_futures):
            future.result()
    finally:
        stop.set()
        readers.shutdown(wait=True, cancel_futures=True)
        gisting.shutdown(wait=True, cancel_futures=True)
    ordered = [drafts[s] for s in sorted(drafts)]
    pages = [replace(p, index=k) for k, p in enumerate(ordered)]
    # gists first: a kill between the two writes leaves no numbered pages, and the next attempt numbers again
    writer.put_many("gist", [(k, asdict(replace(draft_gists[p.start], page=k)))
                             for k, p in enumerate(ordered) if p.start in draft_gists])
    writer.put_many("page", [(p.index, asdict(p)) for p in pages])
    _drop_drafts(writer)


def _drop_drafts(writer: MemoryWriter) -> None:
    """Chunked pagination's drafts, once the pages are numbered."""
    for kind in (DRAFT_PAGE, DRAFT_GIST):
        writer.delete(kind)


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


def _gist(page: Page, request: LLMRequest, llm: LLM, trace: Trace, opts: ReadAgentOptions, *, around: str = "",
          earlier: AbstractSet[str] = frozenset()) -> Gist:
    """The page's gist. An empty reply, one not shorter than its page or one that repeats itself is re-asked
    once; then the page's first fifth stands in, recorded as a fallback. A gist continuing the pagination
    conversation (``around``: the other text it shows; ``earlier``: the gists before it) must also be about its
    page and not an earlier page's gist again; if the re-ask fails too, the page is gisted on its own with the
    paper's prompt (it costs reading the page again) before the first fifth stands in."""
    found = decide(llm, request, lambda reply: check_gist(reply, page, around=around, earlier=earlier), trace,
                   retries=min(1, opts.max_retries),
                   correction=lambda problem: f"That {problem}. Please shorten the passage again: just give "
                                              "a shortened version, shorter than the passage.",
                   describe=lambda text: f"gist of page {page.index} ({len(text.split())} of {page.words} words)")
    if found.value is not None:
        return Gist(page.index, found.value)
    if around or earlier:
        trace.note(f"continued gist of page {page.index} rejected ({'; '.join(found.problems)}); "
                   "gisting the page on its own")
        return _gist(page, gist_request(page, opts), llm, trace, opts)
    words = page.text.split()
    kept = max(FALLBACK_GIST_MIN_WORDS, len(words) // 5)
    trace.note(f"gist of page {page.index} fell back to its first {min(kept, len(words))} words after: "
               f"{'; '.join(found.problems)}")
    return Gist(page.index, " ".join(words[:kept]), source="fallback")
