"""The code reader: FragRel's repository-level code retrieval (Sec. 4.2, Eq. 8, App. A, B.2) over RepoCoder's
setup, for ``pagemind complete DIR FILE:LINE`` and ``pagemind ask DIR QUESTION``.

* **Index** (:meth:`CodeReader.build`): the source files of DIR (:mod:`..retrieval.codefiles`), cut into
  RepoCoder windows of 20 lines every 10 lines (stored content-addressed in the store, items of kind
  ``fragment``), parsed with tree-sitter into the repository graph (:mod:`..retrieval.coderepo`; rebuilt
  each run, it is derived from the files in seconds).
* **Retrieval** (:func:`..retrieval.coderank.rank_code`): s_ind by BM25 (FragRel) or Jaccard (RepoCoder),
  then FragRel with the code-structure relation (alpha 0.5) on the top ``top_m`` candidates.
* **complete**: the query is the 20 lines above the line to complete (RepoCoder's first round). The file's
  windows that reach that line or below are excluded and the graph hides the hole (no leakage); its windows
  inside the code shown in the prompt are not shown again (they still count in the scores). The best
  ``top_k`` (10) of the 2 x ``top_k`` best windows that fit ``budget`` tokens (default 2000, RepoCoder's
  Codex setting) become RepoCoder's prompt (:mod:`.code_prompt`) above the file's last lines that fit
  ``file_budget`` tokens. The reply is cut to the completed lines (:func:`.code_prompt.extract_completion`).
* **ask**: the question is the query; the ``top_k`` best windows that fit ``budget`` (default: what the model's
  window allows) are shown, best first, each headed by its path and lines, and the model answers free-form
  (or picks an option, with the ReadAgent multiple-choice prompt).

Identical windows (boilerplate found in several files) are shown once, with all their paths, as RepoCoder
merges them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ConfigError, InputError
from ..llm.base import LLMRequest, Message
from ..llm.client import LLM
from ..llm.usage import Trace
from ..prompts import get_prompt
from ..retrieval.fragments import Fragment, from_dicts, split_repository
from ..retrieval.fragrel.code_files import (DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, SourceTree, decode_source,
                                            walk_source_tree)
from ..retrieval.fragrel.code_rank import CodeRanking, CodeSearchSettings, rank_code
from ..retrieval.fragrel.code_repo import CodeRepository
from ..retrieval.fragrel.repocoder import (code_text, extract_completion, keep_last_lines, question_context,
                                           repocoder_context, repocoder_prompt)
from ..retrieval.select import fit
from ..store import Store, memory_key
from .answering import answer, answer_request
from .question import Answer, Question

METHOD = "code"
WINDOW, STRIDE = 20, 10  # RepoCoder / FragRel B.2: S_w = 20 lines, S_s = 10
COMPLETE_BUDGET = 2000  # RepoCoder's retrieved-context budget with Codex (half of its 4k window)


@dataclass(frozen=True)
class CodeOptions:
    """Settings of the code reader; ``None`` for an option given to :meth:`create` means its default."""

    scorer: str = "bm25"  # bm25 (FragRel) or jaccard (RepoCoder)
    fragrel: bool = True
    alpha: float = 0.5
    top_k: int = 10  # fragments shown (FragRel B.2: top 10)
    top_m: int = 50  # FragRel candidates: relation rows for the best top_m by s_ind
    min_weight: float = 0.01  # code-relation paths lighter than this count as 0
    budget: int | None = None  # tokens of the retrieved fragments; None: complete 2000, ask what fits
    file_budget: int | None = 2000  # complete: tokens of the current file's last lines; None: what fits
    query_lines: int = WINDOW  # complete: lines above the hole used as the query (RepoCoder: 20)
    max_tokens: int = 128  # complete: tokens of the reply
    max_lines: int = 8  # complete: most lines returned
    max_fanout: int = 5  # call edges: most same-named definitions a call may link to
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_files: int = DEFAULT_MAX_FILES
    constrained: bool = True  # multiple-choice answers through a grammar when the backend has one
    max_retries: int = 2

    @classmethod
    def create(cls, **given: Any) -> "CodeOptions":
        known = {f.name for f in fields(cls)}
        bad = set(given) - known
        if bad:
            raise ConfigError(f"unknown code option(s): {', '.join(sorted(bad))} (have: {', '.join(sorted(known))})")
        opts = replace(cls(), **{k: v for k, v in given.items() if v is not None})
        for name in ("top_k", "top_m", "query_lines", "max_tokens", "max_lines", "max_file_bytes", "max_files"):
            if getattr(opts, name) < 1:
                raise ConfigError(f"{name} must be at least 1 (got {getattr(opts, name)})")
        for name in ("budget", "file_budget"):
            if getattr(opts, name) is not None and getattr(opts, name) < 1:
                raise ConfigError(f"{name} must be at least 1 token (got {getattr(opts, name)})")
        if opts.max_fanout < 0:
            raise ConfigError("max_fanout must be >= 0")
        opts.search()  # validates scorer, alpha, top_m, min_weight
        return opts

    def search(self) -> CodeSearchSettings:
        return CodeSearchSettings(self.scorer, self.fragrel, self.alpha, self.top_m, self.min_weight)  # type: ignore[arg-type]

    @staticmethod
    def memory_settings() -> dict[str, Any]:
        return {"fragments": "lines", "window": WINDOW, "stride": STRIDE}


@dataclass(frozen=True, eq=False)
class CodeIndex:
    """A repository ready to search: its stored memory key, fragments and graph."""

    key: str
    repo: CodeRepository
    seconds: float  # walk + parse + graph
    notes: tuple[str, ...] = ()  # files left out, one line each

    @property
    def tree(self) -> SourceTree:
        return self.repo.tree

    @property
    def fragments(self) -> list[Fragment]:
        return self.repo.fragments


@dataclass(frozen=True, eq=False)
class Completion:
    """What ``complete`` returns: the completed lines and how they were obtained."""

    text: str
    path: str
    line: int  # 1-based: the first line the completion stands for
    prompt: str  # the RepoCoder prompt (the user message)
    fragments: tuple[dict[str, Any], ...]  # shown, best first
    context_tokens: int  # tokens of the retrieved part (header + blocks)
    code_tokens: int  # tokens of the current file's part
    notes: tuple[str, ...] = ()
    reply: str | None = None  # the model's raw reply (None: prompt only)
    trace: Trace = field(default_factory=Trace)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "trace"}
        data["fragments"] = list(self.fragments)
        data["notes"] = list(self.notes)
        data["usage"] = asdict(self.trace.usage)
        return data


class CodeReader:
    """``build(directory)`` once per run, then any number of ``complete`` and ``answer`` calls."""

    def __init__(self, llm: LLM, store: Store, options: CodeOptions | None = None):
        opts = options or CodeOptions()
        self.options = replace(opts, constrained=opts.constrained and llm.backend.capabilities.supports_grammar)
        self.llm = llm
        self.store = store

    # --- index --------------------------------------------------------------------------------------
    def build(self, directory: str | Path) -> CodeIndex:
        start = time.perf_counter()
        tree = walk_source_tree(directory, max_file_bytes=self.options.max_file_bytes,
                                max_files=self.options.max_files)
        key, fragments = self._fragments(tree)
        repo = CodeRepository(tree, fragments, WINDOW, STRIDE, self.options.max_fanout)
        return CodeIndex(key, repo, time.perf_counter() - start, tuple(tree.notes()))

    def _fragments(self, tree: SourceTree) -> tuple[str, list[Fragment]]:
        settings = self.options.memory_settings()
        key = memory_key(tree.id, METHOD, settings, "-")  # the windows depend on the files only
        record = self.store.get_memory(key)
        if record is not None and record.status == "complete":
            return key, from_dicts(self.store.items(key, "fragment"))
        fragments = split_repository(((f.path, f.text) for f in tree.files), WINDOW, STRIDE)
        self.store.put_document(tree.id, tree.name, tree.words, tree.chars)
        self.store.open_memory(key, tree.id, METHOD, settings, "-")
        self.store.put_items(key, "fragment", [(f.index, f.as_dict()) for f in fragments])
        self.store.mark_complete(key)
        return key, fragments

    # --- retrieval ----------------------------------------------------------------------------------
    def retrieve(self, index: CodeIndex, query: str, hole: tuple[str, int] | None = None) -> CodeRanking:
        return rank_code(index.repo, query, self.options.search(), hole)

    def _ranked(self, index: CodeIndex, ranking: CodeRanking,
                hide: Callable[[Fragment], bool] | None = None) -> tuple[list[Fragment], dict[int, list[str]]]:
        """The best 2 x top_k windows (without those ``hide`` names), identical texts merged (the best-ranked
        copy stands for all), and the paths of every copy that may be shown."""
        allowed = set(ranking.order.tolist())
        where: dict[str, list[str]] = defaultdict(list)
        for f in index.fragments:
            if f.index in allowed and f.source not in where[f.text]:
                where[f.text].append(f.source)
        ranked, paths, seen = [], {}, set()
        for i in ranking.order.tolist():
            f = index.fragments[i]
            if f.text in seen or (hide is not None and hide(f)):
                continue
            seen.add(f.text)
            ranked.append(f)
            paths[f.index] = sorted(where[f.text])
            if len(ranked) >= 2 * self.options.top_k:
                break
        return ranked, paths

    def _shown(self, chosen: Sequence[Fragment], paths: dict[int, list[str]], ranking: CodeRanking) -> tuple:
        """The shown windows for reports: lines 1-based inclusive; s_rel None when not re-scored."""
        rel = ranking.s_rel

        def score(value: float) -> float | None:
            return round(float(value), 6) if np.isfinite(value) else None

        return tuple({"index": f.index, "paths": paths[f.index], "start": f.start + 1, "end": f.end,
                      "s_ind": score(ranking.s_ind[f.index]), "s_rel": None if rel is None else score(rel[f.index])}
                     for f in chosen)

    # --- completion ---------------------------------------------------------------------------------
    def _complete_request(self, prompt: str) -> LLMRequest:
        system = get_prompt("code", "complete.system").render(language="Python")
        return LLMRequest(messages=(Message("system", system), Message("user", prompt)), role="complete",
                          max_tokens=self.options.max_tokens)

    def prepare(self, index: CodeIndex, text: str, path: str, line: int) -> Completion:
        """The completion prompt for line ``line`` (1-based) of ``text``, the file at ``path`` (its path in the
        tree, or any label when the file is not part of it); nothing is sent to the model."""
        lines = text.splitlines()
        if not 1 <= line <= len(lines) + 1:
            raise InputError(f"{path} has {len(lines)} lines: the line to complete must be 1..{len(lines) + 1}")
        hole = line - 1
        prefix = lines[:hole]
        notes: list[str] = []
        in_tree = path in index.repo.file_index
        if in_tree and index.tree.file(path).text != text:  # type: ignore[union-attr]
            raise InputError(f"{path} changed since it was indexed; index again")
        query = "\n".join(prefix[-self.options.query_lines:])
        ranking = self.retrieve(index, query, (path, hole) if in_tree else None)
        budget = self.options.budget or COMPLETE_BUDGET
        count = self.llm.count_tokens
        file_fits = (lambda code: count(code) <= self.options.file_budget) if self.options.file_budget else None
        first = keep_last_lines(prefix, file_fits) if file_fits else 0
        code = code_text(prefix[first:])
        if first:
            notes.append(f"file cut to its last {hole - first} of {hole} lines (file_budget "
                         f"{self.options.file_budget} tokens)")
        # the file's own windows that lie in the code shown below the fragments would only repeat it
        ranked, paths = self._ranked(index, ranking, lambda f: in_tree and f.source == path and f.start >= first)

        shown_code = code if file_fits else ""  # file_budget None: the file takes what the context leaves

        def fits(context: str) -> bool:
            return count(context) <= budget and self.llm.fits(self._complete_request(repocoder_prompt(context,
                                                                                                       shown_code)))

        def render(frs: list[Fragment]) -> str:
            return repocoder_context(frs, lambda f: paths[f.index])

        chosen = fit(ranked, fits, "score", self.options.top_k, max_skips=len(ranked) + 1, render=render)
        context: str | None = chosen.text
        if not fits(context):  # not even the header fits the budget or the window
            context = None
            notes.append(f"no retrieved fragment shown: the header alone is over the {budget}-token budget")
        elif chosen.skipped:
            notes.append(f"{len(chosen.skipped)} fragment(s) skipped: over the {budget}-token budget")
        if not self.options.file_budget:  # what fits the window: cut the file after the context
            first = keep_last_lines(prefix, lambda c: self.llm.fits(
                self._complete_request(repocoder_prompt(context, c))))
            code = code_text(prefix[first:])
        prompt = repocoder_prompt(context, code)
        if not self.llm.fits(self._complete_request(prompt)):
            raise ConfigError(f"the completion prompt does not fit {self.llm.model_id}'s window of "
                             f"{self.llm.context_window} tokens; lower --budget or --file-budget")
        shown = self._shown(chosen.fragments if context is not None else (), paths, ranking)
        details = {"query": query, "excluded": ranking.excluded, "candidates": int(len(ranking.candidates)),
                   "subgraph_nodes": ranking.subgraph_nodes, "seconds": dict(ranking.seconds),
                   "index_seconds": round(index.seconds, 3), "budget": budget, "in_tree": in_tree,
                   "options": asdict(self.options)}
        return Completion("", path, line, prompt, shown, count(context) if context is not None else 0,
                          count(code), tuple(list(index.notes) + notes), None, Trace(), details)

    def complete(self, index: CodeIndex, text: str, path: str, line: int) -> Completion:
        """Retrieve, build the RepoCoder prompt, ask the model, and cut its reply to the completed lines."""
        prepared = self.prepare(index, text, path, line)
        trace = Trace()
        response, event = self.llm.complete(self._complete_request(prepared.prompt), trace)
        completion, notes = extract_completion(response.text, text.splitlines()[:line - 1], self.options.max_lines,
                                               truncated=response.finish_reason == "length")
        trace.decide(event, f"{len(completion.splitlines())} line(s)")
        return replace(prepared, text=completion, reply=response.text, notes=prepared.notes + tuple(notes),
                       trace=trace)

    # --- questions ----------------------------------------------------------------------------------
    def _answer_request(self, index: CodeIndex, question: Question, context: str) -> LLMRequest:
        if question.is_choice:
            return answer_request(question, context, "quality", self.options.constrained)
        prompt = get_prompt("code", "answer").render(name=index.tree.name, fragments=context, question=question.text)
        return LLMRequest(messages=(Message("user", prompt),), role="answer", max_tokens=512)

    def answer(self, index: CodeIndex, question: Question) -> Answer:
        query = question.text if not question.is_choice else question.text + "\n" + "\n".join(question.options)
        ranking = self.retrieve(index, query)
        ranked, paths = self._ranked(index, ranking)
        budget = self.options.budget

        def fits(context: str) -> bool:
            if budget is not None and self.llm.count_tokens(context) > budget:
                return False
            return self.llm.fits(self._answer_request(index, question, context))

        chosen = fit(ranked, fits, "score", self.options.top_k, max_skips=len(ranked) + 1,
                     render=lambda frs: question_context(frs, lambda f: paths[f.index]))
        fallbacks = list(index.notes)
        if ranked and not chosen.fragments:
            fallbacks.append(f"no fragment fits the budget ({budget} tokens) or the model's window")
        elif chosen.skipped:
            fallbacks.append(f"{len(chosen.skipped)} fragment(s) skipped: over the budget or the window")
        trace = Trace()
        reply = answer(self.llm, question, self._answer_request(index, question, chosen.text), trace,
                       self.options.max_retries)
        words = len(chosen.text.split())
        return Answer(
            question=question, method=METHOD, text=reply.text, choice=reply.choice, pages_read=chosen.indices,
            compression_rate=100.0 * (1 - words / max(1, index.tree.words)), context_words=words, trace=trace,
            fallbacks=fallbacks + reply.fallbacks,
            details={"repository": index.tree.name, "files": len(index.tree.files),
                     "fragment_count": len(index.fragments), "fragments": list(self._shown(chosen.fragments, paths,
                                                                                           ranking)),
                     "context_tokens": self.llm.count_tokens(chosen.text), "seconds": dict(ranking.seconds),
                     "index_seconds": round(index.seconds, 3), "options": asdict(self.options)},
        )


# --- the API the CLI and pagemind.api use --------------------------------------------------------------
def parse_target(spec: str) -> tuple[str, int | None]:
    """``FILE:LINE`` -> (FILE, LINE); ``FILE`` -> (FILE, None), i.e. complete after the last line."""
    path, sep, tail = spec.rpartition(":")
    if sep and path and tail.isdigit():
        return path, int(tail)
    if sep and path and tail and not Path(spec).exists():
        raise InputError(f"{spec}: LINE must be a positive number (FILE:LINE)")
    return spec, None


def read_target(index: CodeIndex, directory: str | Path, file: str | Path) -> tuple[str, str]:
    """(text, path) of the file to complete: ``file`` as given, or relative to ``directory``. A file inside
    the indexed tree is named by its tree path (so its own windows below the hole are excluded)."""
    given = Path(file)
    candidates = [given] if given.is_absolute() else [given, Path(directory) / given]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise InputError(f"{file}: no such file (looked in . and {directory})")
    root = Path(directory).resolve()
    try:
        rel = found.resolve().relative_to(root).as_posix()
    except ValueError:
        rel = None
    if rel is not None and rel in index.repo.file_index:
        return index.tree.file(rel).text, rel  # type: ignore[union-attr]
    return decode_source(found.read_bytes(), str(file)), rel or str(file)


def code_reader(pm: Any, **options: Any) -> CodeReader:
    """A reader on a :class:`pagemind.api.Pagemind` session's model and store."""
    return CodeReader(pm.llm, pm.store, CodeOptions.create(**options))


def ask_repository(pm: Any, directory: str | Path, question: str | Question, options: Sequence[str] = (),
                   **code_options: Any) -> Answer:
    """Answer a question about the source tree ``directory`` (``pagemind ask DIR QUESTION``)."""
    reader = code_reader(pm, **code_options)
    index = reader.build(directory)
    q = question if isinstance(question, Question) else Question.parse(question, tuple(options))
    return reader.answer(index, q)


def complete_file(pm: Any, directory: str | Path, file: str | Path, line: int | None = None,
                  prompt_only: bool = False, **code_options: Any) -> Completion:
    """Complete line ``line`` (1-based; None: after the last line) of ``file`` with fragments retrieved from
    ``directory`` (``pagemind complete DIR FILE:LINE``). ``prompt_only``: build the prompt, call no model."""
    reader = code_reader(pm, **code_options)
    index = reader.build(directory)
    text, path = read_target(index, directory, file)
    line = len(text.splitlines()) + 1 if line is None else line
    return reader.prepare(index, text, path, line) if prompt_only else reader.complete(index, text, path, line)
