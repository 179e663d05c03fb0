"""The Reader contract every method implements (a template method, as llama_index's retrievers).

A method is one :class:`Reader` subclass: a ``name``, an ``Options`` declaration (:mod:`.options`) and two steps:

* ``_build(document, writer, build)``: turn the document into memory items, written through the
  :class:`MemoryWriter` as each unit finishes (a kill loses only the work in flight);
* ``_answer(memory, question, context)``: answer from the memory, returning a :class:`Reading`.

Plus ``_assemble(document, key, items)``, which turns the stored items back into the method's memory value.
The base owns everything else: the content-addressed memory key, build / resume / load, the progress callback,
the constraint capability check, fallbacks, and the :class:`Answer` (usage, what was read, compression rate,
trace, citations: a reader declares its evidence on the :class:`Reading`, :meth:`Reader._cite` turns it into
citations through :mod:`.evidence`). Every LLM decision goes through :func:`.decide.decide`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from ..answering.evidence import Evidence
from ..answering.finish import Context, Progress, Reading
from ..answering.question import Answer, Question
from ..citations import Citation
from ..errors import ConfigError, InputError, LLMError
from ..library import Library, Shelf
from ..llm.client import LLM
from ..llm.usage import Trace
from ..store import SQLStore, memory_key
from .options import ReaderOptions

if TYPE_CHECKING:
    from ..retrieval.embed import Embedder
    from ..retrieval.fragments import Fragment
    from ..retrieval.index import FragmentIndex


class Source(Protocol):
    """What a memory is built from: a :class:`Document`, or a source tree for the code reader."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def words(self) -> int: ...


class Memory(Protocol):
    """What every method's memory value offers the surfaces (CLI ``show``, evaluation, the server)."""

    @property
    def key(self) -> str | None:
        """The store key (None: nothing is stored, e.g. the full text); read-only, as frozen memories have it."""
        ...

    def outline(self) -> list[str]:
        """Human-readable lines: the memory as ``pagemind show`` prints it."""
        ...

    def as_json(self) -> dict[str, Any]:
        """The memory's content as JSON-ready data."""
        ...


M = TypeVar("M", bound=Memory)
OptionsT = TypeVar("OptionsT", bound=ReaderOptions)
Read = TypeVar("Read")


class MemoryWriter:
    """Where ``_build`` reads what an interrupted build already stored and writes each unit as it finishes."""

    def __init__(self, store: SQLStore, key: str) -> None:
        self.store, self.key = store, key

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The stored items of ``kind``, in index order."""
        return self.store.items(self.key, kind)

    def put(self, kind: str, index: int, data: dict[str, Any]) -> None:
        self.store.put_item(self.key, kind, index, data)

    def put_many(self, kind: str, items: list[tuple[int, dict[str, Any]]]) -> None:
        """Many items in one transaction."""
        if items:
            self.store.put_items(self.key, kind, items)

    def delete(self, kind: str) -> None:
        """Drop every item of ``kind`` (drafts a build no longer needs)."""
        self.store.delete_items(self.key, kind)


@dataclass
class Build:
    """What ``_build`` gets beside the writer: the trace of its LLM calls and the progress callback."""

    trace: Trace
    progress: Progress | None = None
    total: int = 0  # words of the document

    def report(self, done: int, phase: str = "reading", unit: str = "word") -> None:
        """``done`` of the document's words read in ``phase``."""
        self.phase(phase, min(done, self.total), self.total, unit)

    def phase(self, name: str, done: int = 0, total: int = 0, unit: str = "") -> None:
        if self.progress is not None:
            self.progress(name, done, total, unit)


@dataclass(frozen=True)
class About:
    """How a method presents itself (``pagemind methods``, the server's method list)."""

    title: str  # for people (``ReadAgent-P``)
    summary: str  # one line
    paper: str = "pagemind"  # where the method comes from


@dataclass(frozen=True)
class StoredMemory:
    """The identity every stored memory carries: its key, its document and the settings it was built with. A
    library's memory, composed of its documents' memories, also says where each document's units sit."""

    key: str | None  # the store key (None: nothing is stored, e.g. a composed library memory)
    document_id: str
    document_words: int
    settings: dict[str, Any]
    shelves: tuple[Shelf, ...] = field(default=(), kw_only=True)  # a library's: each document's units


class Method(ABC):
    """What the registry lists under a name: a :class:`Reader`, or a :class:`Chooser` that picks one per document.
    Both present themselves alike (``pagemind methods``, the CLI flags, the HTTP and MCP schemas)."""

    name: ClassVar[str]  # the method name users type (``readagent-p``)
    about: ClassVar[About]
    Options: ClassVar[type[ReaderOptions]]
    unit: ClassVar[str] = "page"  # what ``Answer.pages_read`` counts: page | leaf | fragment | text
    source: ClassVar[str] = "document"  # document | directory

    @classmethod
    def describe_method(cls) -> dict[str, Any]:
        """The method as ``pagemind methods --json`` and the server list it."""
        return {"name": cls.name, "title": cls.about.title, "summary": cls.about.summary, "paper": cls.about.paper,
                "source": cls.source, "reads": cls.unit, "presets": list(cls.Options.presets),
                "options": cls.Options.json_schema()}


class Reader(Method, Generic[M, OptionsT]):
    """A method: ``build(document) -> memory`` once, ``answer(memory, question) -> Answer`` many times."""

    memory_kind: ClassVar[str | None] = None  # the store's method name; None: nothing is stored
    # The version of the build: bump it when ``_build`` changes what it stores, so memories built before are built
    # again (it is part of their key from 2 on; 1 leaves the keys of memories stored before versions existed).
    builder_version: ClassVar[int] = 1

    def __init__(self, llm: LLM, store: SQLStore, options: OptionsT | None = None, **given: Any) -> None:
        if options is not None and given:
            raise TypeError("give options or keyword options, not both")
        opts: Any = options if options is not None else self.Options.create(**given)
        if not isinstance(opts, self.Options):
            raise TypeError(f"{self.name} takes {self.Options.__name__}, not {type(opts).__name__}")
        # Grammar-constrained replies only where the backend enforces them; elsewhere the parsers work alone.
        if opts.constrained and not llm.backend.capabilities.supports_grammar:
            opts = opts.replace(constrained=False)
        self.options: OptionsT = opts
        self.llm, self.store = llm, store
        self._documents: dict[str, Any] = {}  # the documents built or loaded (a few), by id: citations point into them
        self._embedder: Embedder | None = None  # a reader that embeds: the encoder it was given (else one by name)
        self._indexes: dict[str, FragmentIndex] = {}  # :meth:`keyed_index`: a memory's index, by the memory's key
        # the citation encoder, resolved once from the option: never from what the process happened to load before
        chosen = opts.cite_encoder
        self.citation_encoder: str = ("minilm" if self.embeds() else "lexical") if chosen == "auto" else chosen
        self.check()

    def embeds(self) -> bool:
        """Whether the reader runs the embedded encoder anyway (``cite_encoder=auto`` then re-ranks its citations
        with it); a reader that embeds overrides this."""
        return False

    def check(self) -> None:
        """Rules that need the model (e.g. a segment must fit its window); raise :class:`ConfigError`."""

    # --- the memory --------------------------------------------------------------------------------
    @property
    def builds_with_llm(self) -> bool:
        """Whether building the memory takes LLM calls (its cost counts as indexing)."""
        return self.memory_kind is not None

    def builder(self) -> int:
        """The version of the build these options run: :attr:`builder_version` (a method whose bump changed the
        build of some options only may keep the others' version, and so their keys)."""
        return self.builder_version

    def memory_settings(self) -> dict[str, Any]:
        """What the memory depends on besides the document and the model: the options that shape it."""
        return self.options.memory_settings()

    def key_settings(self) -> dict[str, Any]:
        """The settings in the memory's key and record: :meth:`memory_settings`, and the builder version from 2 on."""
        version = self.builder()
        settings = self.memory_settings()
        return {**settings, "builder": version} if version > 1 else settings

    def memory_model(self) -> str:
        """Which model the memory depends on (``-``: none, e.g. fixed word windows): the model's identity, not
        where it is served, so replicas and a moved server find the memories of the same model
        (:attr:`pagemind.llm.base.Backend.model_identity`)."""
        return self.llm.model_identity if self.builds_with_llm else "-"

    @property
    def scope(self) -> str:
        """Whose memories this reader builds and reads: its LLM client's scope (``""``: the local user's), so the
        memories and the cached replies of one user of the service are never another's (:meth:`LLM.scoped`)."""
        return self.llm.scope

    def memory_key(self, document: Source) -> str | None:
        if self.memory_kind is None or isinstance(document, Library):  # a library's is its documents'
            return None
        return memory_key(document.id, self.memory_kind, self._keyed(document), self.memory_model(), self.scope)

    def _keyed(self, document: Source) -> dict[str, Any]:
        """The settings a memory is keyed and stored by: the reader's, and the document's sections where it has any
        (the same text read into other sections is another memory: its fragments and nodes carry them)."""
        structure = str(getattr(document, "structure_key", ""))  # a source tree has none
        return {**self.key_settings(), "structure": structure} if structure else self.key_settings()

    def build(self, document: Any, progress: Progress | None = None, trace: Trace | None = None) -> M:
        """The memory of ``document``: loaded when stored, resumed when half-built, else built and stored. A
        :class:`~pagemind.library.Library`'s: each document's memory so, composed (:meth:`_compose`)."""
        trace = trace if trace is not None else Trace()
        if isinstance(document, Library):
            return self._build_library(document, progress, trace)
        key = self.memory_key(document)
        build = Build(trace, progress, document.words)
        if key is None:
            memory = self._assemble(document, None, None)
        else:
            writer = MemoryWriter(self.store, key)
            earlier = self.store.get_memory(key)  # a build that was cut short: this attempt resumes it
            if earlier is not None and earlier.status == "complete":  # read only: nothing is written
                build.phase(f"{self.name}: the memory was found in the store")
            else:
                self.store.put_document(document.id, document.name, document.words, getattr(document, "chars", 0)
                                        or len(getattr(document, "text", "")))
                self.store.open_memory(key, document.id, self.memory_kind, self._keyed(document),  # type: ignore[arg-type]
                                       self.memory_model(), self.scope)
                self._build_once(document, key, writer, build, resumed=earlier is not None)
            memory = self._assemble(document, key, writer)
        self._ready(memory)
        self._known(document)
        return memory

    def _build_library(self, library: Library, progress: Progress | None, trace: Trace) -> M:
        """Each document's memory as it is built alone (stored, resumable, found again: adding a document to a
        library builds that document only), several at once up to the backend's slots; then composed."""
        from concurrent.futures import ThreadPoolExecutor

        if not self.composes:
            raise ConfigError(f"{self.name} reads one document at a time, not a library")
        members = library.members
        done = [0]

        def one(member: Any) -> M:
            def told(phase: str, n: int, total: int, unit: str) -> None:
                if progress is not None:
                    progress(f"{member.name} ({done[0] + 1}/{len(members)}): {phase}", n, total, unit)

            memory = self.build(member, told if progress is not None else None, trace)
            done[0] += 1
            return memory

        workers = max(1, min(self.llm.concurrency, len(members)))
        if workers == 1:
            parts = [one(m) for m in members]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(one, members))
        if progress is not None:
            progress(f"{self.name}: composing the library's {len(members)} documents", 0, 0, "")
        memory = self._compose(library, parts, trace)
        self._ready(memory)
        return memory

    @property
    def composes(self) -> bool:
        """Whether this method reads a library (it composes its documents' memories: :meth:`_compose`)."""
        return type(self)._compose is not Reader._compose

    def _compose(self, library: Library, parts: list[M], trace: Trace) -> M:
        """The memory of a library from its documents' memories (``parts``, in ``library.members``' order), with
        its :class:`~pagemind.library.Shelf` per document. Library-level structures are recomputed from the
        parts (their LLM calls, if any, go to ``trace`` and the response cache)."""
        raise NotImplementedError

    def _build_once(self, document: Any, key: str, writer: MemoryWriter, build: Build, resumed: bool) -> None:
        """Build under the memory's lease: another thread, process or replica building the same memory is waited
        for (then its memory is used), and one that died is taken over (the build resumes from its items)."""
        from ..leases import Lease

        lease = Lease(self.store, f"build:{key}")

        def waiting(holder: Any) -> None:
            build.phase(f"{self.name}: waiting for the build of this memory by pid {holder.pid} on {holder.host}")

        with lease.held(on_wait=waiting):
            record = self.store.get_memory(key)
            if record is not None and record.status == "complete":  # built while we waited
                build.phase(f"{self.name}: the memory was built by another process")
                return
            told = build.progress

            def alive(phase: str, done: int, total: int, unit: str) -> None:
                lease.refresh()
                if told is not None:
                    told(phase, done, total, unit)

            before = len(build.trace.events)
            if not resumed and getattr(document, "previous", None) is not None:
                self._carry_over(document, writer, build)
            try:
                self._build(document, writer, replace(build, progress=alive))
            finally:  # what this attempt spent, also when it was cut short
                spent = Trace(build.trace.events[before:]).usage.as_dict()
                self.store.add_build_usage(key, spent, resumed)
            self.store.mark_complete(key)

    def _carry_over(self, document: Any, writer: MemoryWriter, build: Build) -> None:
        """Start the memory of a changed document from its previous version's (same method, options, model and
        scope), where the text is unchanged: the units :meth:`_reuse` keeps are stored first, and the build
        resumes after them as after a kill."""
        old = self.load(document.previous)
        if old is None:
            return
        kept = self._reuse(old, document.previous, document, writer)
        if kept:
            build.phase(f"{self.name}: {kept} unit(s) of the previous version reused")

    def _reuse(self, old: M, previous: Any, document: Any, writer: MemoryWriter) -> int:
        """Store the units of ``old`` (the memory of ``previous``) that ``document`` would get again, and return how
        many; the default keeps none (a method without LLM-built units rebuilds at no LLM cost)."""
        return 0

    def load(self, document: Any) -> M | None:
        """The finished memory for these settings and model, or None (a library's: when each of its documents'
        is finished)."""
        if isinstance(document, Library):
            parts = [self.load(m) for m in document.members]
            if not self.composes or any(p is None for p in parts):
                return None
            memory = self._compose(document, parts, Trace())  # type: ignore[arg-type]
            self._ready(memory)
            return memory
        key = self.memory_key(document)
        if key is None:
            self._known(document)
            return self._assemble(document, None, None)
        record = self.store.get_memory(key)
        if record is None or record.status != "complete":
            return None
        memory = self._assemble(document, key, MemoryWriter(self.store, key))
        self._ready(memory)
        self._known(document)
        return memory

    def _known(self, document: Any) -> None:
        """Remember the document a memory was built or loaded from (a few): answers cite into its text."""
        if hasattr(document, "text"):
            known: dict[str, Any] = vars(self).setdefault("_documents", {})  # also for a subclass's own __init__
            ident = document.id
            known.pop(ident, None)
            known[ident] = document
            for old in list(known)[:-4]:
                known.pop(old, None)

    def _build(self, document: Any, writer: MemoryWriter, build: Build) -> None:
        """Write the memory's items (resuming from ``writer.items``). Methods that store nothing need none."""
        raise NotImplementedError(f"{self.name} stores no memory")

    @abstractmethod
    def _assemble(self, document: Any, key: str | None, items: MemoryWriter | None) -> M:
        """The memory value from the stored items (``items`` None when the method stores nothing)."""

    def _ready(self, memory: M) -> None:
        """Hook after a build or load (e.g. RAG embeds its fragments once)."""

    def describe(self, memory: M) -> dict[str, Any]:
        """Sizes and settings of a memory, one level deep (``pagemind index`` prints it)."""
        return {}

    # --- answering ---------------------------------------------------------------------------------
    def answer(self, memory: M, question: Question, progress: Progress | None = None,
               on_text: Callable[[str], None] | None = None, trace: Trace | None = None,
               document: Any = None) -> Answer:
        """Answer ``question``; ``progress`` hears the phases, ``on_text`` the free-form answer as it is written;
        the LLM calls go to ``trace`` (a new one if None). Citations point into ``document`` (default: the one
        this reader built or loaded ``memory`` from)."""
        context = Context(trace=trace if trace is not None else Trace(), progress=progress, on_text=on_text)
        reading = self._answer(memory, question, context)
        shelved = getattr(memory, "shelves", ())
        if shelved:  # a library's answer: each unit read is placed back in its document, which citations name
            reading.evidence = [e for item in reading.evidence for e in _unshelve(item, shelved)]
            reading.details["library"] = {"documents": len(shelved), "read": sorted(
                {e.within.name for e in reading.evidence if e.within is not None})}
            document = None
        elif document is None:
            document = vars(self).get("_documents", {}).get(getattr(memory, "document_id", ""))
        from ..answering.finish import finish

        return finish(question, reading, self.options, self.llm, context, method=self.name, unit=self.unit,
                      encoder=self.citation_encoder, document=document)

    # --- retrieving: passages without an LLM call -----------------------------------------------------
    def units(self, memory: M) -> list[Evidence]:
        """Every passage of ``memory`` a retriever may return, in reading order (RAG's fragments, ReadAgent's pages,
        MemWalker's leaves); :class:`InputError` for a reader that keeps none."""
        raise InputError(f"{self.name} keeps no passages to retrieve (it reads the text whole): retrieve with rag, "
                         "op-rag, a ReadAgent method or memwalker")

    def passage_index(self, memory: M) -> FragmentIndex:
        """The index :meth:`rank` searches: BM25 over :meth:`units` (RAG searches with its own scorer and
        FragRel)."""
        from ..retrieval.index import FragmentIndex

        return FragmentIndex(self.passage_fragments(memory))

    def keyed_index(self, memory: StoredMemory, make: Callable[[Embedder | None], FragmentIndex],
                    embedder: str | None = None) -> FragmentIndex:
        """``memory``'s index, made once by ``make`` and kept by the memory's key for the reader's life; given
        ``embedder`` (a name), ``make`` gets that encoder — the reader's own where it was given one — with its vectors
        kept in the store's embedding cache, so a memory is embedded once, whichever reader ranks it."""
        key = memory.key or memory.document_id
        if key not in self._indexes:
            encoder = None
            if embedder is not None:
                from ..retrieval.embed import CachedEmbedder, load_embedder

                encoder = CachedEmbedder.in_store(self._embedder or load_embedder(embedder), self.store)
            self._indexes[key] = make(encoder)
        return self._indexes[key]

    def passage_fragments(self, memory: M) -> list[Fragment]:
        """:meth:`units` as the fragments an index ranks: each its own text, the head carried above it apart (a
        table's header is shown with its rows, not scored as theirs — as RAG's fragments)."""
        from ..retrieval.fragments import Fragment

        return [Fragment(i, u.text[len(u.head):], i, head=u.head) for i, u in enumerate(self.units(memory))]

    def rank(self, memory: M, query: str) -> list[tuple[Evidence, float]]:
        """``memory``'s passages for ``query``, best first with their scores, and no LLM call."""
        units = self.units(memory)
        if not units:
            return []
        ranking = self.passage_index(memory).rank(query)
        return [(units[i], float(ranking.scores[i])) for i in self.ordered(memory, query, ranking.order)]

    def ordered(self, memory: M, query: str, order: Any) -> list[int]:
        """The order :meth:`rank` gives the passages: the index's ranking as it is (a reader may move some first)."""
        return [int(i) for i in order]

    def retrieve_passages(self, memory: M, query: str, k: int = 4, document: Any = None) -> list[Citation]:
        """The ``k`` passages of ``memory`` that best match ``query`` (:meth:`rank`: no LLM call), each a
        :class:`~pagemind.citations.Citation` of the whole passage at its place in its document (a library's
        passages in their member documents), with its score."""
        from ..answering import evidence as ev

        shelved = getattr(memory, "shelves", ())
        if document is None and not shelved:
            document = vars(self).get("_documents", {}).get(getattr(memory, "document_id", ""))
        out: list[Citation] = []
        for item, score in self.rank(memory, query):
            for placed in _unshelve(item, shelved) if shelved else [item]:
                source = placed.within if placed.within is not None else document
                found = ev.passage(source, placed, round(score, 4)) if source is not None else None
                if found is not None:
                    out.append(found)
            if len(out) >= k:
                break
        return out[:k]

    def _reply(self, question: Question, request: Any, context: Context, phase: str = "answering") -> Any:
        """The answer step every reader shares: send ``request`` (re-asked until one option is named, for multiple
        choice), stream a free-form answer to ``context.on_text``, and record its fallbacks."""
        from .reply import answer

        context.phase(phase)
        reply = answer(self.llm, question, request, context.trace, self.options.max_retries, context.on_text)
        for note in reply.fallbacks:
            context.fallback(note)
        if reply.finish_reason != "stop":
            context.finish_reason = reply.finish_reason
        context.probability = reply.probability
        # the option chosen, where the letters' shares were read
        chosen = reply.choice if reply.probability.choice is not None else None
        # the options reordered first: the answer's prompt is what the backend has just read, the prior's is not
        if self.options.reorder == "auto" and chosen is not None:
            from .reply import reordered

            moved = _probe(context, "reorder: the call with the options reversed failed ({}); none recorded",
                           lambda: reordered(self.llm, question, request, chosen, context.trace))
            context.probability = replace(context.probability, reordered=moved)
        # the prior asks the reader's one-turn prompt: an answer asked as the next turn of a conversation (ReadAgent's
        # follow-up look-up) has no such prompt to compare with, so it gets none; with auto, nor does one whose
        # reordered share was read where the shipped model for such answers does not read the lift (calibrate.py's
        # --without has_reordered:lift); on asks it wherever it can (labelled runs that record both)
        wanted = self.options.prior == "on" or (self.options.prior == "auto" and (
            context.probability.reordered is None or _reordered_reads_lift()))
        if wanted and chosen is not None and len(request.messages) == 1:
            from .reply import prior

            unread = _probe(context, "prior: the call with no text failed ({}); no prior recorded",
                            lambda: prior(self.llm, question, self.options.prompt_set, self.options.constrained,
                                          chosen, context.trace))
            context.probability = replace(context.probability, prior=unread)
        if self.options.samples and not question.is_choice:  # the answer's prompt, just read, sampled again
            if question.reply is not None:
                context.fallback("samples: none sent for an answer in the asker's own reply format (its limits, stops "
                                 "and temperature are the asker's)")
            else:
                from .reply import sampled

                context.phase("sampling the answer again")
                agreed = _probe(context, "samples: a sampled reply failed ({}); no agreement recorded",
                                lambda: sampled(self.llm, question, request, reply.text, self.options.samples,
                                                context.trace))
                if agreed is not None:
                    share, replies = agreed
                    context.probability = replace(context.probability, agreement=share, sampled=replies,
                                                  against=reply.text)
        return reply

    @abstractmethod
    def _answer(self, memory: M, question: Question, context: Context) -> Reading:
        """Answer ``question`` from ``memory``; record LLM calls on ``context.trace``, fallbacks with
        ``context.fallback``."""



def _reordered_reads_lift() -> bool:
    """Whether the shipped model that reads a multiple-choice answer with its reordered share reads the prior's lift
    too (the prior's call worth making for it); True where no choice model is shipped (the prior is recorded)."""
    from ..answering.calibration import model_for

    model = model_for("choice", {"has_reordered": 1.0})
    return model is None or "lift" in model.names


def _probe(context: Context, failed: str, call: Callable[[], Read | None]) -> Read | None:
    """Calls after an answer that read the model (the reordered options, the prior, the samples): what they read, or
    None with ``failed`` (the error in its ``{}``) recorded as a fallback where a call fails — the answer stands and
    its confidence reads the labels' mean."""
    try:
        return call()
    except LLMError as err:
        context.fallback(failed.format(err))
        return None


def _unshelve(item: Evidence, shelved: tuple[Shelf, ...]) -> list[Evidence]:
    """A composed memory's unit as its document's: numbered there, cited in that document's text. The whole text
    of a library (the full-text reader) is each document it holds in full."""
    if item.index is None:
        return [replace(item, text=s.document.text, within=s.document) for s in shelved
                if s.document.text in item.text]
    shelf = next((s for s in shelved if s.holds(item.unit, item.index)), None)
    return [] if shelf is None else [replace(item, index=item.index - shelf.first, within=shelf.document)]


@dataclass(frozen=True)
class Chosen:
    """Which method a :class:`Chooser` picked for a document, and why (answers and runs say it)."""

    method: str
    reason: str
    what: str = ""  # what the chosen method does, for people ("the whole text", "OP-RAG: ...")
    unused: tuple[str, ...] = ()  # options given for the choice that the chosen method does not take

    @property
    def said(self) -> dict[str, str]:
        """The pick and its reason as answers, descriptions and run records name them."""
        return {"method": self.method, "reason": self.reason}


class Chooser(Method):
    """A method that is a choice, not a reader (``auto``): for each document it picks one of its ``candidates`` and
    hands it every option given that the pick takes, its own shared ones (a budget) and the pick's own (a preset, a
    fragment size) alike. :meth:`pagemind.Pagemind.plan` resolves it; it builds and answers nothing itself."""

    candidates: ClassVar[tuple[str, ...]] = ()  # the methods it may pick

    def __init__(self, llm: LLM, store: SQLStore, options: ReaderOptions | None = None, **given: Any) -> None:
        if options is not None and given:
            raise TypeError("give options or keyword options, not both")
        own = {s.name for s in self.Options.specs()}
        passed = {k: v for k, v in given.items() if k not in own}
        unknown = sorted(k for k in passed if k not in self.candidate_options())
        if unknown:
            raise ConfigError(f"unknown {self.name} option(s): {', '.join(unknown)} (have its own: "
                              f"{', '.join(sorted(own))}; and those of {', '.join(self.candidates)})")
        self.options = options if options is not None else self.Options.create(
            **{k: v for k, v in given.items() if k in own})
        self.passed = {k: v for k, v in passed.items() if v is not None}  # for the pick, where it takes them
        self.llm, self.store = llm, store

    @classmethod
    @abstractmethod
    def readers(cls) -> dict[str, type[Reader[Any, Any]]]:
        """The classes of :attr:`candidates`, by name."""

    @classmethod
    def candidate_options(cls) -> set[str]:
        """Every option a candidate declares (what may be given to the choice for the method it picks)."""
        return {s.name for reader in cls.readers().values() for s in reader.Options.specs()}

    def options_for(self, method: type[Method], defaults: Mapping[str, Any] | None = None,
                    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """(the options ``method`` takes: the choice's shared ones, ``defaults`` for that method (e.g. the preset
        an evaluation gives it), then those given to the choice; the names of those given that it does not
        take)."""
        names = {s.name for s in method.Options.specs()}
        shared = {s.name: getattr(self.options, s.name) for s in self.Options.specs() if s.name in names}
        taken = {k: v for k, v in {**(defaults or {}), **self.passed}.items() if k in names}
        return {**shared, **taken}, tuple(sorted(k for k in self.passed if k not in names))

    @abstractmethod
    def choose(self, document: Any) -> Chosen:
        """The method for ``document``, and why (one of :attr:`candidates`)."""

    def resolve(self, document: Any, defaults: Mapping[str, Mapping[str, Any]] | None = None,
                ) -> tuple[Reader[Any, Any], Chosen]:
        """The reader picked for ``document`` with the options it takes (``defaults``: options per candidate,
        under those given), and what was picked, why, and which of the options given it does not take."""
        chosen = self.choose(document)
        method = self.readers().get(chosen.method)
        if method is None:
            raise ConfigError(f"{self.name} picked {chosen.method!r}, which is not one of its readers")
        options, unused = self.options_for(method, (defaults or {}).get(chosen.method))
        return method(self.llm, self.store, method.Options.create(**options)), replace(chosen, unused=unused)


__all__ = ["About", "Build", "Chooser", "Chosen", "Context", "Memory", "MemoryWriter", "Method", "Progress", "Reader",
           "Reading", "Source", "StoredMemory"]
