"""The public Python API. The CLI is a thin layer over this module."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import limits
from .answering.question import Answer, Question
from .citations import Citation
from .config import Settings, resolve_settings
from .conversation import Turn, needs_rewrite, standalone
from .errors import Abandoned, ConfigError, InputError, NotFound
from .library import Change, Libraries, Library, Skipped
from .llm.base import Backend
from .llm.client import LLM
from .llm.registry import open_backend
from .llm.usage import Trace
from .methods import registry
from .methods.base import Chooser, Chosen, Memory, Method, Progress, Reader
from .runs import AGENT_RUNS, Recorder, Runs
from .store import SQLStore, StoreResponseCache, open_store
from .store.rows import (
    AgentRow,
    DocumentRow,
    LibraryDocumentRow,
    LibraryRow,
    MemoryContent,
    MemoryRecord,
    RunRow,
    memory_scope,
)
from .text import Document, load_document
from .users import Users, agent_key

if TYPE_CHECKING:
    from datetime import datetime

    from .agent import Agent, AgentOptions
    from .agent.consolidate import Consolidation
    from .agent.conversations import Said
    from .agent.idle import Due
    from .retrieval.embed import Embeddings


def methods() -> tuple[str, ...]:
    """Every method name (pagemind's and those other packages register)."""
    return registry.names()


METHODS = tuple(n for n in registry.BUILTIN if n != "code")  # pagemind's own document methods; methods() adds plugins


@dataclass(frozen=True)
class Plan:
    """What reads a source, decided once (:meth:`Pagemind.plan`): the reader with the options it takes, the source
    as it reads it, and for a choice (``auto``) what it picked, why and which options given it does not take."""

    method: str  # the method as asked ("auto", "rag")
    reader: Reader[Any, Any]
    source: Any
    chosen: Chosen | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the options as given (recorded on runs)

    def said(self) -> str | None:
        """The choice for people ("auto: reading the whole text: 2,345 tokens fit ..."); None for a reader asked by
        name."""
        if self.chosen is None:
            return None
        unused = f" (not used by it: {', '.join(self.chosen.unused)})" if self.chosen.unused else ""
        return f"{self.method}: reading {self.chosen.what}: {self.chosen.reason}{unused}"


class Pagemind:
    """A configured session: one backend, one store, any number of documents, methods and questions.

    Args:
        llm: a spec (``local:NAME``, ``gguf:PATH``, ``openai:MODEL``) or a :class:`Backend` object
            (e.g. the scripted fake in tests; it stays the caller's to close, so several sessions can share one
            loaded model). ``None``: from settings (the embedded default model).
        store: a store (:class:`Store`, ``PostgresStore``), a SQLite path, a ``postgresql://`` URL, or ``None``
            for the ``store`` setting (default ``<user dir>/pagemind.db``).
        **settings: any :class:`Settings` field (argument > ``PAGEMIND_*`` env > config file > default).
    """

    def __init__(self, llm: str | Backend | None = None, *, store: SQLStore | str | Path | None = None,
                 settings: Settings | None = None, **given: Any) -> None:
        if settings is None:
            settings = resolve_settings(llm=llm if isinstance(llm, str) else None, **given)
        self.settings = settings
        self.store = open_store(store or settings.store or settings.store_path())
        self._backend = llm if isinstance(llm, Backend) else None
        self._llm: LLM | None = None
        self._telemetry: Any = False  # not looked up yet

    @property
    def llm(self) -> LLM:
        """The client; the backend is opened on first use (loading a local model takes seconds)."""
        if self._llm is None:
            backend = self._backend or open_backend(self.settings)
            cache = StoreResponseCache(self.store) if self.settings.cache else None
            self._llm = LLM(backend, cache=cache, concurrency=self.settings.concurrency,
                            max_retries=self.settings.max_retries)
        return self._llm

    def document(self, source: str | Path | Document, encoding: str = "utf-8",
                 progress: Callable[[str, int, int, str], None] | None = None) -> Document:
        """A file read as a document; a PDF, EPUB or DOCX file is read once: the digest of its bytes (with the
        reading rules, OCR mode and encoding) finds the text and structure its first reading gave in the store.
        ``progress`` hears a PDF's pages as they are read (``progress(phase, done, total, unit)``)."""
        if isinstance(source, Document):
            return source
        from .text.document import reading_key

        key = reading_key(source, encoding, self.settings.ocr, self.settings.ocr_pages)
        kept = self.store.file_read(key) if key else None
        if kept is not None:
            return Document.restored(kept[0], Path(source).name, kept[1])
        document = load_document(source, encoding=encoding, max_bytes=self.settings.max_bytes, ocr=self.settings.ocr,
                                 ocr_pages=self.settings.ocr_pages, progress=progress)
        if key:
            with self.store.transaction():
                self.store.put_file_read(key, document.id, document.text, document.structure())
        return document

    # --- a user's documents (the service, MCP) ----------------------------------------------------------
    def add_document(self, data: bytes | str | Path, name: str | None = None, *, user_id: int,
                     encoding: str = "utf-8", wanted: Callable[[], bool] | None = None,
                     run: RunRow | str | None = None) -> DocumentRow:
        """Keep a document for a user: file bytes (an upload; the format told by content and ``name``), a text,
        or a path. The same checks and errors as the CLI (:class:`InputTooLarge`, :class:`UnsupportedInput`,
        :class:`InputError`); nothing is stored when one is raised. ``wanted``: whether the one who asked still
        waits, looked at after every page read (:meth:`read`). ``run``: a queued ``read`` run to record the
        reading into (its pages as progress, the document as its result; a cancel stops it at the next page)."""
        if run is None:
            return self._keep(self.read(data, name, encoding=encoding, wanted=wanted), name, user_id)
        recorder = self.recorder(run)
        with recorder.running():
            document = self.read(data, name, encoding=encoding, wanted=wanted, progress=recorder.progress)
            recorder.check(now=True)  # a cancel (or an erase) that came while the last page was read keeps nothing
            kept = self._keep(document, name, user_id)
            recorder.result({"document": kept.id, "name": kept.name, "words": kept.words})
        return kept

    def _keep(self, document: Document, name: str | None, user_id: int) -> DocumentRow:
        with self.store.transaction():
            self.store.put_document(document.id, document.name, document.words, len(document.text))
            self.store.put_document_text(document.id, document.text, document.structure())
            self.store.add_user_document(user_id, document.id, name or document.name, time.time())
        found = self.store.user_document(user_id, document.id)
        assert found is not None
        return found

    def read(self, data: bytes | str | Path, name: str | None = None, *, encoding: str = "utf-8",
             wanted: Callable[[], bool] | None = None,
             progress: Callable[[str, int, int, str], None] | None = None) -> Document:
        """A document from file bytes (an upload; the format told by content and ``name``), a text, or a path, with
        the checks and errors of the CLI; nothing is stored. ``wanted``: looked at after every page of a PDF read
        (an OCR'd page takes seconds): when it says no, reading stops there with :class:`Abandoned`. ``progress``
        hears the pages as they are read (and may stop the reading by raising)."""
        from .text.document import load_bytes

        def heard(phase: str, done: int, total: int, unit: str) -> None:
            if wanted is not None and not wanted():
                raise Abandoned(f"{phase}: stopped after {done} of {total} {unit}s, nobody waits for it")
            if progress is not None:
                progress(phase, done, total, unit)

        if isinstance(data, Path):  # an upload spooled to a file: named by the upload, not the temporary file
            return load_document(data, encoding=encoding, max_bytes=self.settings.max_bytes, name=name,
                                 ocr=self.settings.ocr, ocr_pages=self.settings.ocr_pages, progress=heard)
        if isinstance(data, bytes):
            return load_bytes(data, name or "upload.txt", encoding=encoding, max_bytes=self.settings.max_bytes,
                              ocr=self.settings.ocr, ocr_pages=self.settings.ocr_pages, progress=heard)
        return load_bytes(data.encode("utf-8"), name or "text.txt", max_bytes=self.settings.max_bytes)

    def documents(self, user_id: int, *, after: str | None = None, limit: int | None = None) -> list[DocumentRow]:
        """A user's kept documents, newest first; one page of them by cursor when asked (those after the document
        ``after``, at most ``limit``)."""
        return self.store.user_documents(user_id, after, limit)

    def user_document(self, doc_id: str, user_id: int) -> DocumentRow:
        """One of a user's kept documents; :class:`NotFound` when it is not theirs (or gone)."""
        row = self.store.user_document(user_id, doc_id)
        if row is None:
            raise NotFound(f"no document {doc_id!r}")
        return row

    def remove_document(self, doc_id: str, user_id: int) -> None:
        """Drop a document from a user's documents (the text goes when nobody keeps it); :class:`NotFound` when it
        is not theirs."""
        if not self.store.remove_user_document(user_id, doc_id):
            raise NotFound(f"no document {doc_id!r}")

    def open_document(self, doc_id: str, *, user_id: int) -> Document:
        """A user's kept document (or a document of one of their libraries), ready to index or ask;
        :class:`NotFound` when it is not theirs (or gone)."""
        row = self.store.user_document(user_id, doc_id)
        name = row.name if row is not None else self.store.library_member_name(self.scope(user_id), doc_id)
        text = self.store.document_text(doc_id) if name is not None else None
        if name is None or text is None:
            raise NotFound(f"no document {doc_id!r}")
        return Document.restored(text, name, self.store.document_structure(doc_id))

    def memories(self, doc_id: str, *, user_id: int) -> list[MemoryRecord]:
        """The memories a user's own requests made of one of their documents, most recently updated first (another
        user's memories of the same text are not among them); :class:`NotFound` when the document is not theirs."""
        self.user_document(doc_id, user_id)
        return self.store.memories_for(doc_id, scope=self.scope(user_id))

    def memory(self, doc_id: str, key: str, *, user_id: int) -> MemoryContent:
        """One of :meth:`memories` with its stored items by kind; :class:`NotFound` when the document or the memory
        is not the user's (another user's memory of the same text is not found either)."""
        self.user_document(doc_id, user_id)
        found = self.store.get_memory(key)
        if found is None or found.document_id != doc_id or found.scope != self.scope(user_id):
            raise NotFound(f"no memory {key!r} of document {doc_id!r}")
        return MemoryContent(found, self.store.memory_items(key))

    def scope(self, user_id: int | None) -> str:
        """Whose memories and cached LLM replies a user's requests use: ``""`` for the local user (``None``: the
        CLI and Python callers; the user named ``local``: ``pagemind mcp`` and ``serve --auth none``), so their
        memories and cache keep the keys they always had; the user's own scope for every other user. One user's
        memories and cache hits are never another's: building the same text for two users builds it twice."""
        return memory_scope(self.store, user_id)

    def method(self, method: str = "auto", *, user_id: int | None = None, **options: Any) -> Reader[Any, Any] | Chooser:
        """What the registry holds under ``method``, with its options (``None`` values mean "the default"; an unknown
        option or a value its declaration refuses is a :class:`ConfigError`): a reader, or a choice such as ``auto``
        (whose :meth:`Chooser.choose` says what it picks for a document), for ``user_id``'s scope (:meth:`scope`)."""
        cls = registry.get(method)
        # Method declares no constructor and the registry types its classes as Method: every registered method is
        # a Reader or a Chooser, both built from (llm, store, **options)
        return cls(self._llm_for(user_id), self.store, **_given(options))  # type: ignore[call-arg, return-value]

    def reader(self, method: str = "auto", *, user_id: int | None = None, document: Any = None,
               **options: Any) -> Reader[Any, Any]:
        """The reader of ``method`` with its options, building and reading the memories of ``user_id``'s scope
        (:meth:`scope`; None: the local user). A choice (``auto``) is resolved for ``document``, which it then
        needs: the reader it picks (:meth:`plan` also says which and why)."""
        return self._resolve(self.method(method, user_id=user_id, **options), document)[0]

    def plan(self, source: str | Path | Document | Library | Plan, method: str = "auto", *, encoding: str = "utf-8",
             user_id: int | None = None, **options: Any) -> Plan:
        """What will read ``source`` (a path, a document, a library), decided once: the source as ``method`` reads
        it and the reader with every option given that it takes; a choice (``auto``) picks its reader here, and the
        plan says what, why, and which options given the pick does not take. :meth:`index`, :meth:`ask`, the CLI
        and the evaluation take the plan, so a choice is made once per source and nothing given to it is lost."""
        if isinstance(source, Plan):
            return source
        entry = self.method(method, user_id=user_id, **options)
        document = self.source(source, entry, encoding, user_id=user_id)
        reader, chosen = self._resolve(entry, document)
        return Plan(method, reader, document, chosen, _given(options))

    @staticmethod
    def _resolve(entry: Reader[Any, Any] | Chooser, document: Any) -> tuple[Reader[Any, Any], Chosen | None]:
        if not isinstance(entry, Chooser):
            return entry, None
        if document is None:
            raise ConfigError(f"{entry.name} chooses a method per document: give the document (document=)")
        return entry.resolve(document)

    def _llm_for(self, user_id: int | None) -> LLM:
        """The client whose cached replies (and so the readers' memories) are ``user_id``'s."""
        return self.llm.scoped(self.scope(user_id))

    def source(self, source: str | Path | Document | Library, reader: Method | type[Method],
               encoding: str = "utf-8", *, user_id: int | None = None) -> Any:
        """What ``reader`` reads: a :class:`Document` from a file; a :class:`~pagemind.library.Library` for a
        folder of documents or the name of one of ``user_id``'s libraries (a name that is not a file); a source
        tree for a directory reader (``code``, :meth:`ask_code`)."""
        if reader.source == "directory":
            if isinstance(source, (Document, Library)):
                raise InputError(f"{reader.name} reads a source tree (a directory), not a document")
            return reader.source_tree(source)  # type: ignore[union-attr]
        if isinstance(source, Library):
            return source
        if isinstance(source, str) and self.store.library(self.scope(user_id), source) is not None:
            if Path(source).exists():  # never a silent choice between the two
                kind = "folder" if Path(source).is_dir() else "file"
                raise InputError(f"{source!r} is both your stored library {source!r} and a {kind} here: say which — "
                                 f"the {kind} as './{source}', the library by moving the {kind} away or with "
                                 f"Pagemind.library({source!r}) in Python")
            return self.library(source, user_id=user_id)
        if isinstance(source, (str, Path)) and Path(source).is_dir():
            from .library import holds_documents, of_folder

            if not holds_documents(source):  # never read with another method behind the caller's back
                raise InputError(f"{source} is a directory: {reader.name} reads a document, or a folder of documents "
                                 "as a library, and this one holds no document files; a source tree is read by the "
                                 "code method (Pagemind.ask_code, method='code', `pagemind ask DIR`)")
            return of_folder(source, max_bytes=self.settings.max_bytes, encoding=encoding, ocr=self.settings.ocr,
                             ocr_pages=self.settings.ocr_pages)
        return self.document(source, encoding)

    # --- libraries -----------------------------------------------------------------------------------
    def libraries(self, *, user_id: int | None = None, after: str | None = None,
                  limit: int | None = None) -> list[LibraryRow]:
        """``user_id``'s libraries (None: the local user's, the CLI's), by name; one page of them by cursor when
        asked (names after ``after``, at most ``limit``)."""
        return self._libraries(user_id).rows(after, limit)

    def library(self, name: str, *, user_id: int | None = None) -> Library:
        """One of ``user_id``'s libraries with its documents, ready to index or ask; :class:`NotFound` if none."""
        return self._libraries(user_id).open(name)

    def library_row(self, name: str, *, user_id: int | None = None) -> LibraryRow:
        """One of ``user_id``'s libraries: its name, size and creation; :class:`NotFound` when there is none."""
        row: LibraryRow = self._libraries(user_id).row(name)
        return row

    def library_documents(self, name: str, *, user_id: int | None = None) -> list[LibraryDocumentRow]:
        """The documents of one of ``user_id``'s libraries, by name; :class:`NotFound` when there is no such."""
        return self._libraries(user_id).members(name)

    def add(self, name: str, sources: Sequence[str | Path | Document], *, user_id: int | None = None,
            encoding: str = "utf-8") -> tuple[list[Change], list[Skipped]]:
        """Put files, folders (their document files, named by their path inside the folder) or documents in the
        library ``name`` (made when new). A name already there with another text is updated; nothing is built
        here: asking builds the documents not built yet (only those). Files that cannot be read are skipped and
        returned with their reason; the others are added."""
        from .library import Found, read_paths

        found = Found()
        paths = [s for s in sources if not isinstance(s, Document)]
        if paths:
            found = read_paths(paths, max_bytes=self.settings.max_bytes, encoding=encoding, ocr=self.settings.ocr,
                               ocr_pages=self.settings.ocr_pages)
        members = [(n, d, origin) for n, d, origin in found.documents]
        members += [(s.name, s, None) for s in sources if isinstance(s, Document)]
        if not members:
            reasons = "; ".join(f"{s.path}: {s.reason}" for s in found.skipped)
            raise InputError(f"nothing to add to {name!r}" + (f" ({reasons})" if reasons else ""))
        return self._libraries(user_id).add(name, members), found.skipped

    def remove(self, name: str, documents: Sequence[str] = (), *, user_id: int | None = None) -> list[str]:
        """Remove documents (by their names in the library) from a library, or the whole library when none are
        named. What no library and no user holds any more is forgotten: its text and every memory of it."""
        return self._libraries(user_id).remove(name, documents)

    def _libraries(self, user_id: int | None) -> Libraries:
        return Libraries(self.store, self.scope(user_id))

    @property
    def users(self) -> Users:
        """The users of this store (``pagemind users``, ``pagemind serve``'s keys): :class:`pagemind.users.Users`."""
        return Users(self.store)

    @property
    def runs(self) -> Runs:
        """The recorded runs of this store (``pagemind logs``)."""
        return Runs(self.store)

    @property
    def telemetry(self) -> Any:
        """OpenTelemetry export of runs and LLM calls (:mod:`pagemind.telemetry`), None unless configured."""
        if self._telemetry is False:
            from .telemetry import from_environment

            backend = self.llm.backend
            self._telemetry = from_environment(backend.model_id, getattr(backend, "provider", type(backend).__name__))
        return self._telemetry

    def recorder(self, run: RunRow | str) -> Recorder:
        """The recorder of a run, exporting it to OpenTelemetry when configured."""
        return self.runs.recorder(run, telemetry=self.telemetry)

    def index(self, source: str | Path | Document | Plan, method: str = "auto",
              progress: Progress | None = None, *, run: RunRow | str | None = None, user_id: int | None = None,
              trace: Trace | None = None, **options: Any) -> Memory:
        """Build (or resume, or reuse) the memory of a document. Recorded as a run (``run``: an existing queued
        run to record into, e.g. one a server created) unless ``record_runs`` is off; the build's LLM calls also
        go to ``trace`` if given."""
        plan = self.plan(source, method, user_id=user_id, **options)
        reader, document, chosen = plan.reader, plan.source, plan.chosen
        recorder = self._recorder(run, "index", document, plan.method, {"options": plan.options}, user_id)
        if recorder is None:
            built: Memory = reader.build(document, progress=progress, trace=trace)
            return built
        with recorder.running():
            memory: Memory = reader.build(document, progress=_both(progress, recorder.progress),
                                          trace=recorder.trace(trace))
            recorder.result({"memory": reader.memory_key(document), "document": document.id,
                             **_describe(reader, memory, chosen)})
        return memory

    def ask(self, source: str | Path | Document | Plan, question: str | Question, options: Sequence[str] = (),
            method: str = "auto", progress: Progress | None = None, on_text: Callable[[str], None] | None = None,
            *, run: RunRow | str | None = None, user_id: int | None = None, memory: Memory | None = None,
            conversation: Sequence[Turn] = (), **method_options: Any) -> Answer:
        """Answer a question about a document (builds its memory first if needed); a source tree (a directory) is
        read by ``method="code"`` only (:meth:`ask_code`), another method refuses it. A choice (``auto``, the
        default) answers with the method it picks, named in ``answer.method`` and ``answer.details["auto"]``.
        Recorded as a run (``run``: an existing queued run to record into) unless ``record_runs`` is off;
        ``answer.run_id`` names it. ``memory``: this document's memory for this method and options, already at hand
        (``index``'s), so it is not loaded again (a chat asks many questions of one memory). ``conversation``: the
        turns before the question (:class:`~pagemind.conversation.Turn`), which it is first rewritten to stand
        without (one LLM call, in the answer's trace; ``answer.details["standalone"]`` says what was asked)."""
        plan = self.plan(source, method, user_id=user_id, **method_options)
        reader, document, chosen = plan.reader, plan.source, plan.chosen
        q = question if isinstance(question, Question) else Question.parse(question, tuple(options))
        recorder = self._recorder(run, "ask", document, plan.method,
                                  {"question": q.text, "options": list(q.options), "method_options": plan.options},
                                  user_id)
        if recorder is None:
            return self._ask(reader, document, q, progress, on_text, Trace(), Trace(), memory, chosen, conversation)
        with recorder.running():  # the answer is streamed through a cancel check, so a cancel stops it mid-reply
            answer = self._ask(reader, document, q, _both(progress, recorder.progress), recorder.watch(on_text),
                               recorder.trace(), recorder.trace(), memory, chosen, conversation)
            answer.run_id = recorder.run_id
            recorder.result({**answer.as_dict(), "memory": reader.memory_key(document), "document": document.id})
        return answer

    def _ask(self, reader: Reader[Any, Any], document: Any, q: Question, progress: Progress | None,
             on_text: Callable[[str], None] | None, build_trace: Trace, trace: Trace,
             memory: Memory | None = None, chosen: Chosen | None = None, conversation: Sequence[Turn] = ()) -> Answer:
        if memory is None:
            memory = reader.build(document, progress=progress, trace=build_trace)
        asked, rewrite_failed = q, None
        if needs_rewrite(conversation):
            if progress is not None:
                progress("reading the conversation", 0, 0, "")
            q, rewrite_failed = standalone(reader.llm, q, conversation, trace)
        answer = reader.answer(memory, q, progress, on_text, trace=trace, document=document)
        if needs_rewrite(conversation):
            answer.details["standalone"] = {"asked": asked.text, "question": q.text, "turns": len(conversation)}
            if rewrite_failed:
                answer.fallbacks.insert(0, rewrite_failed)
        if chosen is not None:
            answer.details["auto"] = chosen.said
        if build_trace.events:
            answer.index_trace = build_trace
        return answer

    def retrieve(self, source: str | Path | Document | Plan, query: str, k: int = 4, method: str = "rag", *,
                 user_id: int | None = None, **method_options: Any) -> list[Citation]:
        """The ``k`` passages of ``source`` (a document, a library or its name) that best match ``query``, with
        no LLM call: ``method``'s memory ranked as it ranks for an answer (RAG and OP-RAG their fragments by their
        scorer, FragRel included; ReadAgent's pages and MemWalker's leaves by BM25 of their text). Each is a
        :class:`~pagemind.citations.Citation` of the whole passage: its document, place, offsets and score.

        A memory built without the LLM (RAG's fragments) is built here when missing; one that needs the LLM
        (gists, a tree of summaries) must have been built before (:meth:`index`): :class:`InputError` says so."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= limits.MAX_LIST:
            raise InputError(f"k: the passages to return, 1 to {limits.MAX_LIST} (got {k!r})")
        if not query.strip():
            raise InputError("the query is empty")
        limits.check_text("question", query, "the query")
        plan = self.plan(source, method, user_id=user_id, **method_options)
        reader, document = plan.reader, plan.source
        memory = reader.load(document)
        if memory is None:
            if reader.builds_with_llm:
                raise InputError(f"{getattr(document, 'name', 'the source')} has no {reader.name} memory with these "
                                 f"options yet, and building one calls the LLM: index it first (`pagemind index -m "
                                 f"{reader.name}`, Pagemind.index); a retriever makes no LLM call")
            memory = reader.build(document)
        return reader.retrieve_passages(memory, query, k,
                                        document=None if isinstance(document, Library) else document)

    def embed(self, texts: Sequence[str], wanted: Callable[[], bool] | None = None) -> Embeddings:
        """The embedded MiniLM's vector of each text (384 numbers, unit length; no LLM call): what the retrieval
        of RAG, FragRel and the agents' archival search uses, for a client's own. A text longer than the
        encoder's 256-token window is the mean of its windows' vectors; a text over ``limits.MAX_EMBED_TOKENS``
        tokens, texts over the ``embed_tokens`` setting together (at most ``MAX_EMBED_TOTAL``) or more than
        ``MAX_EMBED_INPUTS`` texts are an
        :class:`InputError`. ``wanted``: asked between groups of texts; when it says no (the client left), the work
        stops with :class:`pagemind.errors.Abandoned`."""
        from .answering.evidence import minilm_encoder
        from .retrieval.embed import INSTALL_HINT, MiniLM, text_vectors

        if len(texts) > limits.MAX_EMBED_INPUTS:
            raise InputError(f"at most {limits.MAX_EMBED_INPUTS} texts are embedded at once (got {len(texts)})")
        encoder = minilm_encoder()
        if not isinstance(encoder, MiniLM):
            raise ConfigError(f"embeddings need the embedded MiniLM encoder: {INSTALL_HINT}")
        return text_vectors(encoder, texts, limits.MAX_EMBED_TOKENS, self.settings.embed_tokens, wanted)

    def ask_code(self, directory: str | Path, question: str | Question, options: Sequence[str] = (),
                 **kwargs: Any) -> Answer:
        """Answer a question about a source tree: the ``code`` method (FragRel's code-structure relation over
        RepoCoder windows), with :meth:`ask`'s other arguments and the code method's options."""
        return self.ask(directory, question, options, method="code", **kwargs)

    def _recorder(self, run: RunRow | str | None, kind: str, target: Any, method: str, request: dict[str, Any],
                  user_id: int | None) -> Recorder | None:
        """The recorder of ``run``, or of a new run of ``target`` (a document, a source tree or an agent); None
        when no run is given and ``record_runs`` is off."""
        if run is None and not self.settings.record_runs:
            return None
        if run is None:
            what = {"agent": target.name} if kind in AGENT_RUNS else {"document": getattr(target, "name", "")}
            run = self.runs.create(kind, str(getattr(target, "id", target)), method=method,
                                   request={**what, **request}, user_id=user_id)
        return self.recorder(run)

    # --- agents (MemGPT) -------------------------------------------------------------------------------
    def agent(self, name: str, *, llm: bool = True, user_id: int | None = None) -> Agent:
        """A stored agent (:class:`pagemind.agent.Agent`); ``llm=False`` opens it for reading its memory only;
        ``user_id``: whose cached LLM replies its turns use (:meth:`scope`; None: the local user's)."""
        from .agent import Agent

        return Agent.load(self._llm_for(user_id) if llm else None, self.store, name)

    def create_agent(self, name: str, *, persona: str | None = None, human: str | None = None,
                     options: AgentOptions | dict[str, Any] | None = None, user_id: int | None = None,
                     display_name: str | None = None, blocks: dict[str, str] | None = None,
                     limits: dict[str, int] | None = None, descriptions: dict[str, str] | None = None) -> Any:
        """A new agent; ``options`` an :class:`pagemind.agent.AgentOptions` or its fields; ``user_id`` its owner;
        ``blocks``: more core-memory blocks by label, ``limits`` a block's own character limit by label,
        ``descriptions`` what a block is for by label."""
        from .agent import Agent, AgentOptions

        with self.store.transaction():
            # with the model: an agent whose instructions and core memory leave no room for a reply is refused
            agent = Agent.create(self._llm_for(user_id), self.store, name, persona=persona, human=human,
                                 blocks=blocks, limits=limits, descriptions=descriptions,
                                 options=options if isinstance(options, AgentOptions)
                                 else AgentOptions().updated(**(options or {})), display_name=display_name)
            if user_id is not None:
                self.store.set_agent_owner(agent.id, user_id)
        return agent

    def agents(self, user_id: int, *, after: int | None = None, before: int | None = None,
               limit: int | None = None) -> list[AgentRow]:
        """A user's agents (rows: ``id``, stored ``name`` ``u<user id>.<name>``, ``created``, ``state``), by id; one
        page of them with an id cursor (``after``, ``before``, ``limit``)."""
        return self.store.user_agents(user_id, after, before, limit)

    def user_agent(self, ref: int | str, user_id: int) -> AgentRow:
        """A user's agent by id, or by the user's own name for it (:func:`pagemind.users.agent_key`);
        :class:`NotFound` when there is none or it is another user's."""
        if isinstance(ref, int):
            row = self.store.get_agent_by_id(ref)
        else:
            row = self.store.get_agent(agent_key(user_id, ref))
        if row is None or self.store.agent_owner(row.id) != user_id:
            shown = f"{ref!r} (list your agents to see their names)" if isinstance(ref, str) else str(ref)
            raise NotFound(f"no agent {shown}")
        return row

    def delete_agent(self, name: str) -> None:
        """Delete a stored agent with all its memory (:class:`pagemind.agent.AgentNotFound` when there is none)."""
        from .agent import AgentStore

        AgentStore(self.store).delete_agent(name)

    def export_agent(self, name: str, *, shown_as: str | None = None, model: str | None = None) -> dict[str, Any]:
        """Agent ``name`` as an Agent File (``.af``, Letta's format; a JSON object): blocks, system prompt, every
        message, and its options and archival passages in the ``pagemind`` extension (:mod:`pagemind.agent.agentfile`).
        ``shown_as``: the name the file gives it (a service user's own name for it)."""
        from .agent.agentfile import export_agent

        return export_agent(self.agent(name, llm=False), shown_as, model=model)

    def import_agent(self, data: bytes | str | dict[str, Any], *, name: str | None = None,
                     skip_unsupported: bool = False, user_id: int | None = None, copy: bool = False) -> list[Any]:
        """The agents of an Agent File (a pagemind export, or Letta's), stored: a list of
        :class:`~pagemind.agent.agentfile.AgentPlan` as imported. Letta features without a counterpart are refused
        by name before anything is stored (:class:`~pagemind.agent.agentfile.Unsupported`) unless
        ``skip_unsupported``; ``name`` renames a file's only agent; ``user_id``: the owner (stored per user). A
        name already taken is an :class:`AgentExists`, or with ``copy`` (as Letta imports) the agent is made under
        the first free name ``NAME-2``, ``NAME-3``... (the plan returned carries the name it got)."""
        from dataclasses import replace

        from .agent import Agent, AgentExists, AgentStore
        from .agent.agentfile import plan_import

        plans = plan_import(data, name=name, skip_unsupported=skip_unsupported)
        astore = AgentStore(self.store)
        with self.store.transaction():
            for i, plan in enumerate(plans):
                record = None
                for n in range(1, 1000 if copy else 2):
                    shown = plan.name if n == 1 else f"{plan.name[:40]}-{n}"
                    try:
                        record = astore.create_agent(agent_key(user_id, shown) if user_id is not None else shown,
                                                     plan.options, plan.blocks, "import", plan.versions)
                    except AgentExists:
                        continue
                    plan = plans[i] = replace(plan, name=shown)
                    break
                if record is None:  # named as the user knows it, not as stored
                    raise AgentExists(f"an agent named {plan.name!r} already exists (import it with another "
                                      "name)")
                astore.save_state(record.id, plan.state)
                astore.append(record.id, plan.events)
                if plan.passages:
                    agent = Agent(None, astore, record)
                    agent.archive.insert([p.text for p in plan.passages], [p.time for p in plan.passages],
                                         [p.summary for p in plan.passages], [p.source for p in plan.passages])
                if user_id is not None:
                    self.store.set_agent_owner(record.id, user_id)
                Agent(self.llm, astore, record).check_runs()  # inside the transaction: refused, nothing is stored
        return plans

    def send(self, agent: Any, text: str, *, progress: Progress | None = None, run: RunRow | str | None = None,
             user_id: int | None = None, on_step: Callable[[Any], None] | None = None, key: str | None = None) -> Any:
        """One user message to an agent (a name or an :class:`Agent`): its turn (``TurnResult``), recorded as a
        run with every step (thoughts, function call, result) unless ``record_runs`` is off. ``key``: an
        idempotency key (a retried message already stored under it is not stored twice; ``Agent.say``)."""
        from .agent.core import step_record

        if isinstance(agent, str):
            agent = self.agent(agent, user_id=user_id)
        recorder = self._recorder(run, "turn", agent, "memgpt", {"message": text}, user_id)
        if recorder is None:
            return agent.say(text, progress=progress, on_step=on_step, key=key)

        def record(step: Any) -> None:
            recorder.step("step", **step_record(step))
            if on_step is not None:
                on_step(step)

        with recorder.running():
            turn = agent.say(text, progress=_both(progress, recorder.progress), trace=recorder.trace(), on_step=record,
                             key=key)
            turn.run_id = recorder.run_id
            recorder.result(turn.as_dict())
        return turn

    def consolidate(self, agent: Any, *, progress: Progress | None = None, run: RunRow | str | None = None,
                    user_id: int | None = None) -> Consolidation:
        """One consolidation pass of an agent (a name or an :class:`Agent`) over recall since the last
        (:meth:`Agent.consolidate`), recorded as a run of kind ``consolidate`` (its model calls as steps, what it
        read and wrote as the result) unless ``record_runs`` is off."""
        if isinstance(agent, str):
            agent = self.agent(agent, user_id=user_id)
        recorder = self._recorder(run, "consolidate", agent, "memgpt", {}, user_id)
        if recorder is None:
            alone: Consolidation = agent.consolidate(progress=progress)
            return alone
        with recorder.running():
            done: Consolidation = agent.consolidate(trace=recorder.trace(),
                                                    progress=_both(progress, recorder.progress))
            recorder.result(done.as_dict())
        return done

    def import_conversation(self, agent: Any, said: Sequence[Said], *, consolidate: bool = False,
                            user_id: int | None = None,
                            progress: Progress | None = None) -> tuple[int, Consolidation | None]:
        """A conversation held elsewhere put into an agent's recall (a name or an :class:`Agent`; ``said``:
        :func:`pagemind.agent.conversations.read_conversation`'s messages), each speaker's messages as theirs, all
        citable; with ``consolidate``, then read as the background pass reads new messages — dated summaries, facts
        and human-block lines from every window of it, with no turn per message — recorded as a run. (events
        stored, the pass or None)."""
        if isinstance(agent, str):
            agent = self.agent(agent, user_id=user_id)
        stored = agent.import_messages([s.as_tuple() for s in said])
        return stored, self.consolidate(agent, progress=progress, user_id=user_id) if consolidate else None

    def idle_agents(self, now: datetime | None = None, tried: Mapping[int, int] | None = None) -> list[Due]:
        """The agents of every user due a background consolidation pass at ``now`` (their ``consolidate_idle``
        option on, that long without a new message; :mod:`pagemind.agent.idle`)."""
        from datetime import datetime

        from .agent.idle import due_agents

        return list(due_agents(self.store, now or datetime.now(), tried))

    def complete(self, directory: str | Path, file: str | Path, line: int | None = None, prompt_only: bool = False,
                 **options: Any) -> Any:
        """Complete line ``line`` (1-based; None: after the last line) of ``file`` with fragments retrieved from
        the source tree ``directory`` (the ``code`` method). ``prompt_only``: build the prompt, call no model."""
        from .methods.code import read_target

        reader = self.reader("code", **options)
        index = reader.build(reader.source_tree(directory))  # type: ignore[attr-defined]
        text, path = read_target(index, directory, file)
        line = len(text.splitlines()) + 1 if line is None else line
        return reader.prepare(index, text, path, line) if prompt_only else reader.complete(index, text, path, line)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Close the store and the backend this session opened (a backend passed in is left open)."""
        if self._llm is not None and self._backend is None:
            self._llm.backend.close()
        self.store.close()

    def __enter__(self) -> Pagemind:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _given(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if v is not None}


def _both(first: Progress | None, second: Progress) -> Progress:
    """A progress callback telling two listeners (the caller's display and the run's recorder)."""
    if first is None:
        return second

    def tell(phase: str, done: int, total: int, unit: str) -> None:
        first(phase, done, total, unit)
        second(phase, done, total, unit)

    return tell


def _describe(reader: Reader[Any, Any], memory: Any, chosen: Chosen | None = None) -> dict[str, Any]:
    said = chosen.said if chosen is not None else {}
    try:
        return {"describe": {**said, **reader.describe(memory)}}
    except Exception:  # a description is informative only
        return {"describe": said} if said else {}


def ask(source: str | Path | Document, question: str, *, options: Sequence[str] = (), method: str = "auto",
        llm: str | Backend | None = None, **kwargs: Any) -> Answer:
    """One-shot: ``pagemind.ask("book.txt", "Who finds the map?")``."""
    with Pagemind(llm) as pm:
        return pm.ask(source, question, options=options, method=method, **kwargs)
