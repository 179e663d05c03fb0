"""The code reader: FragRel's repository-level code retrieval (Sec. 4.2, Eq. 8, App. A, B.2) over RepoCoder's
setup, for ``pagemind complete DIR FILE:LINE`` and ``pagemind ask DIR QUESTION``.

* **Index** (:meth:`CodeReader.build`, the :class:`~.base.Reader` template): the source files of DIR
  (:mod:`..retrieval.fragrel.code_files`), cut into RepoCoder windows of 20 lines every 10 lines (stored
  content-addressed in the store, items of kind ``fragment``), parsed with tree-sitter into the repository graph
  (:mod:`..retrieval.fragrel.code_repo`; rebuilt each run, it is derived from the files in seconds).
* **Retrieval** (:func:`..retrieval.fragrel.code_rank.rank_code`): s_ind by BM25 (FragRel) or Jaccard (RepoCoder),
  then FragRel with the code-structure relation (alpha 0.5) on the top ``top_m`` candidates.
* **complete**: the query is the 20 lines above the line to complete (RepoCoder's first round). The file's
  windows that reach that line or below are excluded and the graph hides the hole (no leakage); its windows
  inside the code shown in the prompt are not shown again (they still count in the scores). The best
  ``top_k`` (10) of the 2 x ``top_k`` best windows that fit ``budget`` tokens (default 2000, RepoCoder's
  Codex setting) become RepoCoder's prompt (:mod:`..retrieval.fragrel.repocoder`) above the file's last lines that fit
  ``file_budget`` tokens. The reply is cut to the completed lines
  (:func:`..retrieval.fragrel.repocoder.extract_completion`).
* **ask**: the question is the query; the ``top_k`` best windows that fit ``budget`` (default: what the model's
  window allows) are shown, best first, each headed by its path and lines, and the model answers free-form
  (or picks an option, with the ReadAgent multiple-choice prompt).

Identical windows (boilerplate found in several files) are shown once, with all their paths, as RepoCoder
merges them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..answering.evidence import Evidence, SourceText
from ..answering.finish import Context, Reading
from ..answering.question import Question
from ..declare import option
from ..errors import ConfigError, InputError
from ..llm.base import LLMRequest, Message
from ..llm.decide import Invalid, decide
from ..llm.usage import Trace
from ..prompts import get_prompt
from ..retrieval.fragments import Fragment, from_dicts, split_repository
from ..retrieval.fragrel.code_files import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    SourceTree,
    decode_source,
    walk_source_tree,
)
from ..retrieval.fragrel.repocoder import (
    code_text,
    extract_completion,
    keep_last_lines,
    question_context,
    repocoder_context,
    repocoder_prompt,
)
from ..retrieval.select import fit
from .base import About, Build, MemoryWriter, Reader
from .options import ReaderOptions
from .reply import answer_request

if TYPE_CHECKING:
    from ..retrieval.fragrel.code_rank import CodeRanking, CodeSearchSettings
    from ..retrieval.fragrel.code_repo import CodeRepository

METHOD = "code"
WINDOW, STRIDE = 20, 10  # RepoCoder / FragRel B.2: S_w = 20 lines, S_s = 10
COMPLETE_BUDGET = 2000  # RepoCoder's retrieved-context budget with Codex (half of its 4k window)


@dataclass(frozen=True)
class CodeOptions(ReaderOptions):
    """Settings of the code reader."""

    owner = "code"

    scorer: Literal["bm25", "jaccard"] = option("bm25", "s_ind: BM25 (FragRel) or token-set Jaccard (RepoCoder)")
    fragrel: bool = option(True, "re-score the candidates with FragRel's code-structure relation")
    alpha: float = option(0.5, "FragRel: weight of the environment score", minimum=0)
    top_k: int = option(10, "fragments shown (FragRel B.2: top 10)", minimum=1)
    top_m: int = option(50, "FragRel candidates: relation rows for the best top_m by s_ind", minimum=1)
    min_weight: float = option(0.01, "code-relation paths lighter than this count as unrelated (0: exact)",
                               minimum=0)
    budget: int | None = option(None, "tokens of the retrieved fragments; none: complete 2000, ask what fits",
                                minimum=1)
    file_budget: int | None = option(2000, "complete: tokens of the current file's last lines; none: what fits",
                                     minimum=1)
    query_lines: int = option(WINDOW, "complete: lines above the hole used as the query (RepoCoder: 20)", minimum=1)
    max_tokens: int = option(128, "complete: tokens of the reply", minimum=1)
    max_lines: int = option(8, "complete: most lines returned", minimum=1)
    max_fanout: int = option(5, "call edges: most same-named definitions a call may link to", minimum=0)
    max_file_bytes: int = option(DEFAULT_MAX_FILE_BYTES, "larger source files are left out", minimum=1)
    max_files: int = option(DEFAULT_MAX_FILES, "most source files read", minimum=1)

    def check(self) -> None:
        self.search()  # validates scorer, alpha, top_m, min_weight

    def search(self) -> CodeSearchSettings:
        from ..retrieval.fragrel.code_rank import CodeSearchSettings  # numpy: loaded when the code reader runs

        return CodeSearchSettings(self.scorer, self.fragrel, self.alpha, self.top_m, self.min_weight)


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

    def outline(self) -> list[str]:
        lines = [f"{f.path} ({len(f.text.splitlines())} lines)" for f in self.tree.files]
        return lines + [f"{len(self.fragments)} windows of {WINDOW} lines every {STRIDE}"] + list(self.notes)

    def as_json(self) -> dict[str, Any]:
        return {"files": [f.path for f in self.tree.files], "fragments": len(self.fragments), "notes": list(self.notes)}


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


class CodeReader(Reader[CodeIndex, CodeOptions]):
    """``build(tree)`` once (windows stored, graph built each run), then ``complete`` and ``answer``."""

    name = "code"
    about = About("Code (FragRel)", "a source tree: FragRel's code-structure relation over RepoCoder windows "
                                    "(ask DIR, complete)", "FragRel (§4.2, App. A, B.2) over RepoCoder")
    Options = CodeOptions
    memory_kind = METHOD
    unit = "fragment"
    source = "directory"

    @property
    def builds_with_llm(self) -> bool:
        return False  # the windows depend on the files only

    def memory_settings(self) -> dict[str, Any]:
        return {"fragments": "lines", "window": WINDOW, "stride": STRIDE}

    def source_tree(self, directory: str | Path | SourceTree) -> SourceTree:
        """The source tree of ``directory`` (what :meth:`build` takes)."""
        if isinstance(directory, SourceTree):
            return directory
        return walk_source_tree(directory, max_file_bytes=self.options.max_file_bytes,
                                max_files=self.options.max_files)

    # --- index --------------------------------------------------------------------------------------
    def build(self, source: Any, progress: Any = None, trace: Any = None) -> CodeIndex:
        """The index of a source tree (or of a directory, walked first)."""
        return super().build(self.source_tree(source), progress, trace)

    def load(self, source: Any) -> CodeIndex | None:
        return super().load(self.source_tree(source))

    def _build(self, tree: SourceTree, writer: MemoryWriter, build: Build) -> None:
        fragments = split_repository(((f.path, f.text) for f in tree.files), WINDOW, STRIDE)
        writer.put_many("fragment", [(f.index, f.as_dict()) for f in fragments])

    def _assemble(self, tree: SourceTree, key: str | None, items: MemoryWriter | None) -> CodeIndex:
        assert key is not None and items is not None
        from ..retrieval.fragrel.code_repo import CodeRepository

        start = time.perf_counter()
        repo = CodeRepository(tree, from_dicts(items.items("fragment")), WINDOW, STRIDE, self.options.max_fanout)
        return CodeIndex(key, repo, time.perf_counter() - start, tuple(tree.notes()))

    def describe(self, index: CodeIndex) -> dict[str, Any]:
        return {"repository": index.tree.name, "files": len(index.tree.files), "fragments": len(index.fragments),
                "graph_seconds": round(index.seconds, 3)}

    # --- retrieval ----------------------------------------------------------------------------------
    def retrieve(self, index: CodeIndex, query: str, hole: tuple[str, int] | None = None) -> CodeRanking:
        from ..retrieval.fragrel.code_rank import rank_code

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
        import numpy as np

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
        file_budget = self.options.file_budget
        file_fits = (lambda code: count(code) <= file_budget) if file_budget else None
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
        if not fits(chosen.text):  # not even the header fits the budget or the window
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
        details = {"query": query, "excluded": ranking.excluded, "candidates": len(ranking.candidates),
                   "subgraph_nodes": ranking.subgraph_nodes, "seconds": dict(ranking.seconds),
                   "index_seconds": round(index.seconds, 3), "budget": budget, "in_tree": in_tree,
                   "options": self.options.as_dict()}
        return Completion("", path, line, prompt, shown, count(context) if context is not None else 0,
                          count(code), tuple(list(index.notes) + notes), None, Trace(), details)

    def complete(self, index: CodeIndex, text: str, path: str, line: int) -> Completion:
        """Retrieve, build the RepoCoder prompt, ask the model, and cut its reply to the completed lines. A reply
        whose lines do not read as Python (prose, an explanation) is re-asked once, then returned with a warning."""
        prepared = self.prepare(index, text, path, line)
        trace = Trace()
        prefix = text.splitlines()[:line - 1]
        extracted: dict[str, list[str]] = {}

        def parse(reply: str, truncated: bool = False) -> str | Invalid:
            completion, notes = extract_completion(reply, prefix, self.options.max_lines, truncated=truncated)
            extracted[reply] = notes
            if completion.strip() and not reads_as_python(completion):
                return Invalid("the reply is not Python code")
            return completion

        found = decide(self.llm, self._complete_request(prepared.prompt), parse, trace, retries=1,
                       truncation=lambda reply: parse(reply, truncated=True),
                       correction=lambda problem: "Reply with the code that continues the file only: no explanation, "
                                                  "no prose.",
                       describe=lambda completion: f"{len(completion.splitlines())} line(s)")
        notes = list(extracted.get(found.reply, []))
        if found.value is None:
            completion, _ = extract_completion(found.reply, prefix, self.options.max_lines,
                                               truncated=found.finish_reason == "length")
            notes.append("warning: the model's reply does not read as Python code, also when asked again; "
                         "returned as it is")
        else:
            completion = found.value
        return replace(prepared, text=completion, reply=found.reply, notes=prepared.notes + tuple(notes), trace=trace)

    # --- questions ----------------------------------------------------------------------------------
    def _answer_request(self, index: CodeIndex, question: Question, context: str) -> LLMRequest:
        if question.is_choice:
            return answer_request(question, context, "quality", self.options.constrained)
        prompt = get_prompt("code", "answer").render(name=index.tree.name, fragments=context, question=question.text)
        return LLMRequest(messages=(Message("user", prompt),), role="answer", max_tokens=512)

    def _answer(self, index: CodeIndex, question: Question, context: Context) -> Reading:
        query = question.text if not question.is_choice else question.text + "\n" + "\n".join(question.options)
        ranking = self.retrieve(index, query)
        ranked, paths = self._ranked(index, ranking)
        budget = self.options.budget

        def fits(text: str) -> bool:
            if budget is not None and self.llm.count_tokens(text) > budget:
                return False
            return self.llm.fits(self._answer_request(index, question, text))

        chosen = fit(ranked, fits, "score", self.options.top_k, max_skips=len(ranked) + 1,
                     render=lambda frs: question_context(frs, lambda f: paths[f.index]))
        for note in index.notes:
            context.fallback(note)
        if ranked and not chosen.fragments:
            context.fallback(f"no fragment fits the budget ({budget} tokens) or the model's window")
        elif chosen.skipped:
            context.fallback(f"{len(chosen.skipped)} fragment(s) skipped: over the budget or the window")
        reply = self._reply(question, self._answer_request(index, question, chosen.text), context)
        return Reading(
            reply.text, reply.choice, chosen.indices, len(chosen.text.split()), index.tree.words,
            {"repository": index.tree.name, "files": len(index.tree.files), "fragment_count": len(index.fragments),
             "fragments": list(self._shown(chosen.fragments, paths, ranking)),
             "context_tokens": self.llm.count_tokens(chosen.text), "seconds": dict(ranking.seconds),
             "index_seconds": round(index.seconds, 3), "options": self.options.as_dict()},
            self._evidence(index, chosen.fragments),
        )

    @staticmethod
    def _evidence(index: CodeIndex, shown: Sequence[Fragment]) -> list[Evidence]:
        """The windows shown, each cited in its own file (the citation's document is the file's path)."""
        out = []
        for f in shown:
            file = index.tree.file(f.source)
            if file is not None:
                out.append(Evidence("window", f.index, f.text, "window", within=SourceText(file.path, file.text)))
        return out


def reads_as_python(code: str) -> bool:
    """Whether ``code`` is Python or the valid beginning of it (a completion may stop mid-block or mid-expression):
    prose such as "The code is designed to ..." is not."""
    import codeop
    import textwrap
    import warnings

    source = textwrap.dedent(code)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings of odd but valid code
        for candidate in (source, "def _():\n" + textwrap.indent(source, "    ")):
            try:
                codeop.compile_command(candidate + "\n", symbol="exec")
                return True  # complete, or a valid beginning (None)
            except (SyntaxError, ValueError, OverflowError):
                continue
    return False


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
