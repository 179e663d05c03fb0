"""The public Python API. The CLI is a thin layer over this module."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from .config import Settings, resolve_settings
from .errors import ConfigError
from .llm.base import Backend
from .llm.client import LLM
from .llm.usage import Trace
from .llm.registry import open_backend
from .methods.full import FullTextReader
from .methods.memwalker import MemWalker, MemWalkerOptions
from .methods.question import Answer, Question
from .methods.rag import RAGOptions, RAGReader
from .methods.readagent import ReadAgent, ReadAgentOptions
from .store import SQLiteResponseCache, Store
from .text import Document, load_document


def _readagent(llm: LLM, store: Store, method: str, options: dict[str, Any]) -> ReadAgent:
    return ReadAgent(llm, store, ReadAgentOptions.from_preset(options.pop("preset", None) or "quality", **options),
                     mode=method)


def _memwalker(llm: LLM, store: Store, method: str, options: dict[str, Any]) -> MemWalker:
    return MemWalker(llm, store, MemWalkerOptions.from_preset(options.pop("preset", None) or "quality", **options))


def _rag(llm: LLM, store: Store, method: str, options: dict[str, Any]) -> RAGReader:
    return RAGReader(llm, store, RAGOptions.from_preset(options.pop("preset", None) or "quality", **options),
                     mode=method)


def _full(llm: LLM, store: Store, method: str, options: dict[str, Any]) -> FullTextReader:
    return FullTextReader.from_options(llm, store, **options)


# method name -> factory(llm, store, method, options); each method's options class rejects unknown options.
READERS: dict[str, Callable[[LLM, Store, str, dict[str, Any]], Any]] = {
    "readagent-p": _readagent, "readagent-s": _readagent, "gistmem": _readagent,
    "memwalker": _memwalker,
    "rag": _rag, "op-rag": _rag,
    "full": _full,
}
METHODS = tuple(READERS)


class Pagemind:
    """A configured session: one backend, one store, any number of documents, methods and questions.

    Args:
        llm: a spec (``local:NAME``, ``gguf:PATH``, ``openai:MODEL``) or a :class:`Backend` object
            (e.g. the scripted fake in tests). ``None``: from settings (the embedded default model).
        store: a :class:`Store`, a path, or ``None`` for ``<user dir>/pagemind.db``.
        **settings: any :class:`Settings` field (argument > ``PAGEMIND_*`` env > config file > default).
    """

    def __init__(self, llm: str | Backend | None = None, *, store: Store | str | Path | None = None,
                 settings: Settings | None = None, **given: Any) -> None:
        if settings is None:
            settings = resolve_settings(llm=llm if isinstance(llm, str) else None, **given)
        self.settings = settings
        self.store = store if isinstance(store, Store) else Store(store or settings.store_path())
        self._backend = llm if isinstance(llm, Backend) else None
        self._llm: LLM | None = None

    @property
    def llm(self) -> LLM:
        """The client; the backend is opened on first use (loading a local model takes seconds)."""
        if self._llm is None:
            backend = self._backend or open_backend(self.settings)
            cache = SQLiteResponseCache(self.store) if self.settings.cache else None
            self._llm = LLM(backend, cache=cache, concurrency=self.settings.concurrency,
                            max_retries=self.settings.max_retries)
        return self._llm

    def document(self, source: str | Path | Document, encoding: str = "utf-8") -> Document:
        if isinstance(source, Document):
            return source
        return load_document(source, encoding=encoding, max_bytes=self.settings.max_bytes)

    def reader(self, method: str = "readagent-p", **options: Any):
        """A reader for ``method`` with its options (``None`` values mean "the default"; unknown options are an
        error). Every reader has ``build``, ``load``, ``answer`` and ``describe``."""
        if method not in READERS:
            raise ConfigError(f"unknown method {method!r} (have: {', '.join(METHODS)})")
        return READERS[method](self.llm, self.store, method, {k: v for k, v in options.items() if v is not None})

    def index(self, source: str | Path | Document, method: str = "readagent-p",
              progress: Callable[[int, int], None] | None = None, **options: Any):
        """Build (or resume, or reuse) the memory of a document."""
        return self.reader(method, **options).build(self.document(source), progress=progress)

    def ask(self, source: str | Path | Document, question: str | Question, options: Sequence[str] = (),
            method: str = "readagent-p", progress: Callable[[int, int], None] | None = None,
            **method_options: Any) -> Answer:
        """Answer a question about a document (builds its memory first if needed), or about a source tree when
        ``source`` is a directory (code retrieval with FragRel's code relation; ``method`` does not apply)."""
        if isinstance(source, (str, Path)) and Path(source).is_dir():
            from .methods.code import ask_repository

            return ask_repository(self, source, question, options, **method_options)
        reader = self.reader(method, **method_options)
        build_trace = Trace()
        memory = reader.build(self.document(source), progress=progress, trace=build_trace)
        q = question if isinstance(question, Question) else Question.parse(question, tuple(options))
        answer = reader.answer(memory, q)
        if build_trace.events:
            answer.index_trace = build_trace
        return answer

    def close(self) -> None:
        if self._llm is not None:
            self._llm.backend.close()
        self.store.close()

    def __enter__(self) -> "Pagemind":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def ask(source: str | Path | Document, question: str, *, options: Sequence[str] = (), method: str = "readagent-p",
        llm: str | Backend | None = None, **kwargs: Any) -> Answer:
    """One-shot: ``pagemind.ask("book.txt", "Who finds the map?")``."""
    with Pagemind(llm) as pm:
        return pm.ask(source, question, options=options, method=method, **kwargs)
