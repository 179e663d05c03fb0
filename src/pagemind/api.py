"""The public Python API. The CLI is a thin layer over this module."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from .config import Settings, resolve_settings
from .llm.base import Backend
from .llm.client import LLM
from .llm.registry import open_backend
from .llm.usage import Trace
from .methods import registry
from .methods.base import Memory, Progress, Reader
from .methods.question import Answer, Question
from .store import SQLiteResponseCache, Store
from .text import Document, load_document


def methods() -> tuple[str, ...]:
    """Every method name (pagemind's and those other packages register)."""
    return registry.names()


METHODS = tuple(n for n in registry.BUILTIN if n != "code")  # pagemind's own document methods; methods() adds plugins


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

    def reader(self, method: str = "auto", **options: Any) -> Reader[Any, Any]:
        """The reader of ``method`` with its options (``None`` values mean "the default"; an unknown option or a
        value its declaration refuses is a :class:`ConfigError`)."""
        cls = registry.get(method)
        return cls(self.llm, self.store, **{k: v for k, v in options.items() if v is not None})

    def source(self, source: str | Path | Document, reader: Reader[Any, Any], encoding: str = "utf-8") -> Any:
        """What ``reader`` reads: a :class:`Document` from a file, or a source tree for a directory reader."""
        if reader.source == "directory":
            return reader.source_tree(source)  # type: ignore[attr-defined]
        return self.document(source, encoding)

    def index(self, source: str | Path | Document, method: str = "auto",
              progress: Progress | None = None, **options: Any) -> Memory:
        """Build (or resume, or reuse) the memory of a document."""
        reader = self.reader(method, **options)
        return reader.build(self.source(source, reader), progress=progress)

    def ask(self, source: str | Path | Document, question: str | Question, options: Sequence[str] = (),
            method: str = "auto", progress: Progress | None = None, on_text: Callable[[str], None] | None = None,
            **method_options: Any) -> Answer:
        """Answer a question about a document (builds its memory first if needed), or about a source tree when
        ``source`` is a directory (the ``code`` method: FragRel's code relation)."""
        if isinstance(source, (str, Path)) and Path(source).is_dir():
            method = "code"
        reader = self.reader(method, **method_options)
        build_trace = Trace()
        memory = reader.build(self.source(source, reader), progress=progress, trace=build_trace)
        q = question if isinstance(question, Question) else Question.parse(question, tuple(options))
        answer = reader.answer(memory, q, progress, on_text)
        if build_trace.events:
            answer.index_trace = build_trace
        return answer

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
        if self._llm is not None:
            self._llm.backend.close()
        self.store.close()

    def __enter__(self) -> "Pagemind":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def ask(source: str | Path | Document, question: str, *, options: Sequence[str] = (), method: str = "auto",
        llm: str | Backend | None = None, **kwargs: Any) -> Answer:
    """One-shot: ``pagemind.ask("book.txt", "Who finds the map?")``."""
    with Pagemind(llm) as pm:
        return pm.ask(source, question, options=options, method=method, **kwargs)
