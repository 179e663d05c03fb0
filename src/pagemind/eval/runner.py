"""The evaluation runner: every chosen method on a seeded sample of a dataset, resumable, with shared memories.

Work is grouped by document: for each document and method the reader builds (or finds in the store, which
keeps memories content-addressed) the memory once, then answers every question of that document, so the
prompts that share a prefix run back to back. MemGPT gets a fresh agent per example. Each finished
(example, method) is scored and appended to ``examples.jsonl`` at once; a failed example is recorded with its
error and the run goes on. Token counts include calls served from the LLM cache (what they would cost).
"""

from __future__ import annotations

import random
import sqlite3
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..answering.question import Answer
from ..answering.signals import kind_of, signals
from ..api import Pagemind
from ..errors import BackendUnavailable, ConfigError, DatasetError, RateLimited, ServerError
from ..library import Library
from ..llm.client import LLM
from ..llm.usage import Trace
from ..methods import registry
from ..methods.base import Chooser, Chosen, Reader
from ..methods.options import ReaderOptions
from ..text import Document
from . import metrics
from .datasets import DatasetSpec, DatasetWarning, Example, base_method
from .evidence import evidence_scores, support_proxy
from .memgpt import MemGPTEval, MemGPTEvalOptions, document_of
from .raters import Judgement, Raters
from .rundir import BUILDS, EXAMPLES, RunDir, record_key
from .sets import datasets, load_dataset

MEMGPT = "memgpt"  # the agent: evaluated per example, not a Reader
ALL_METHODS = tuple(n for n in registry.BUILTIN if n != "code") + (MEMGPT,)
# what an evaluated method is given unless -O says otherwise: the papers' protocols, not a user's defaults
PROTOCOL = {"abstain": "off", "reorder": "off"}


def evaluable() -> tuple[str, ...]:
    """Every method the harness can run: the document readers (plugins included) and MemGPT."""
    return registry.document_methods() + (MEMGPT,)


def option_class(method: str) -> type[ReaderOptions]:
    """The options declaration of an evaluable method."""
    if method == MEMGPT:
        return MemGPTEvalOptions
    if method not in evaluable():
        raise ConfigError(f"unknown method {method!r} (have: {', '.join(evaluable())})")
    return registry.get(method).Options

# Failures of the machinery, not of a method: they stop the run (nothing is recorded for the example at hand, so
# running the same command again retries it) instead of being scored as a wrong answer.
FATAL = (BackendUnavailable, RateLimited, ServerError, ConfigError, sqlite3.Error, MemoryError)
_DROP_DETAILS = ("trajectory",)  # large; the walk string keeps the path

Runnable = Reader[Any, Any] | Chooser | MemGPTEval  # what a method name makes: a reader, a choice (auto) or the agent


@dataclass(frozen=True)
class EvalConfig:
    """What to run. ``method_options`` maps a method to extra reader options (``max_pages``, ``keep``...)."""

    dataset: str
    methods: tuple[str, ...]
    data: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None
    seed: int = 0
    budget: int | None = None
    raters: bool = False
    by_document: bool = False
    method_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    retry_errors: bool = False
    concurrency: int | None = None
    unanswerable: bool = False  # also ask each question of its document with the evidence removed (.unanswerable)
    short_answers: bool = False  # score the short phrase each QA answer gives (one more call each: .short)
    ids: tuple[str, ...] = ()  # only these examples (their ids as examples.jsonl names them), in the data's order


def expand_methods(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``all``, comma lists and repeats, checked and de-duplicated in order."""
    out: list[str] = []
    for name in names:
        for part in (p.strip() for p in name.split(",") if p.strip()):
            known = evaluable()
            wanted = tuple(m for m in known if m != "auto") if part == "all" else (part,)  # auto repeats full/RA-P
            for method in wanted:
                base, at, label = method.partition("@")
                if base not in known or (at and not label):
                    raise ConfigError(f"unknown method {method!r} (have: {', '.join(known)}, all; "
                                      "a variant is METHOD@LABEL)")
                if method not in out:
                    out.append(method)
    if not out:
        raise ConfigError("give at least one --method")
    return tuple(out)


def select(examples: list[Example], limit: int | None, seed: int, by_document: bool = False) -> list[Example]:
    """A seeded sample in data order. Raising ``limit`` keeps the earlier sample (a prefix of one permutation).
    ``by_document``: whole documents in seeded order until ``limit`` questions (the last one cut)."""
    if limit is not None and limit < 1:
        raise ConfigError("--limit must be at least 1")
    if limit is None or limit >= len(examples):
        return list(examples)
    rng = random.Random(seed)
    if not by_document:
        chosen = set(rng.sample(range(len(examples)), len(examples))[:limit])
        return [e for i, e in enumerate(examples) if i in chosen]
    docs = list(dict.fromkeys(e.document_id for e in examples))
    picked: list[Example] = []
    for doc in rng.sample(docs, len(docs)):
        picked += [e for e in examples if e.document_id == doc][: limit - len(picked)]
        if len(picked) >= limit:
            break
    keep = {e.id for e in picked}
    return [e for e in examples if e.id in keep]


def usage_of(trace: Trace) -> dict[str, float]:
    """Calls, tokens and seconds of a trace, cached calls included at their token cost."""
    events = trace.events
    return {"calls": len(events), "cached_calls": sum(e.cached for e in events),
            "prompt_tokens": sum(e.prompt_tokens for e in events),
            "completion_tokens": sum(e.completion_tokens for e in events),
            "seconds": round(sum(e.seconds for e in events), 3)}


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:500]


@dataclass
class RunResult:
    run_dir: Path
    config: dict[str, Any]
    examples: int
    finished: int = 0
    errors: int = 0
    skipped: int = 0  # already done in an earlier part of the run


class Runner:
    """Runs one :class:`EvalConfig` in ``run_dir`` with the session ``pm``."""

    def __init__(self, pm: Pagemind, config: EvalConfig, run_dir: str | Path, *, rater_llm: LLM | None = None,
                 progress: bool = True, command: str | None = None) -> None:
        self.pm, self.config, self.dir = pm, config, RunDir(run_dir)
        self.rater_llm, self.show_progress, self.command = rater_llm, progress, command
        self._lock = threading.Lock()
        self._doc_tokens: dict[str, int] = {}
        self._scores: dict[str, list[float]] = {}
        self.dataset_notes: list[str] = []  # what loading the set left out or mended (DatasetWarning)

    # --- setting up --------------------------------------------------------------------------------
    def spec(self) -> DatasetSpec:
        specs = datasets()
        if self.config.dataset not in specs:
            raise DatasetError(f"unknown dataset {self.config.dataset!r} (have: {', '.join(specs)})")
        return specs[self.config.dataset]

    def examples(self) -> list[Example]:
        spec, params = self.spec(), dict(self.config.params)
        if "seed" in spec.params and "seed" not in params:
            params["seed"] = str(self.config.seed)  # generated sets and probes follow --seed
        self.dataset_notes = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DatasetWarning)
            found = load_dataset(spec.name, self.config.data, params)
        for w in caught:  # the set's own notes go to the run directory; any other warning is shown as usual
            if issubclass(w.category, DatasetWarning):
                self.dataset_notes.append(str(w.message))
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if self.config.ids:  # the questions named, before any sample of them
            known, wanted = {e.id for e in found}, set(self.config.ids)
            unknown = [i for i in self.config.ids if i not in known]
            if unknown:
                raise DatasetError(f"no example {', '.join(map(repr, unknown[:5]))} in {spec.name} with these "
                                   f"parameters ({len(found)} examples; ids as examples.jsonl names them)")
            found = [e for e in found if e.id in wanted]
        chosen = select(found, self.config.limit, self.config.seed, self.config.by_document)
        if not self.config.unanswerable:
            return chosen
        from .unanswerable import with_variants

        out, missing = with_variants(chosen)
        if missing:
            self.dataset_notes.append(f"--unanswerable: {missing} of {len(chosen)} examples have no variant (their "
                                      "evidence could not be found in the text: summaries, answers of no content word)")
        return out

    def method_options(self, method: str) -> dict[str, Any]:
        opts = dict(self.config.method_options.get(method, {}))
        preset = self.spec().preset_for(method)
        if preset and "preset" in {spec.name for spec in option_class(base_method(method)).specs()}:  # auto: per pick
            opts.setdefault("preset", preset)
        if self.config.budget is not None:
            opts.setdefault("budget", self.config.budget)
        return opts

    def pick_defaults(self, choice: Chooser) -> dict[str, dict[str, Any]]:
        """What each method a choice may pick gets from this set (its preset), as that method named alone gets."""
        out: dict[str, dict[str, Any]] = {}
        for method, reader in choice.readers().items():
            preset = self.spec().preset_for(method)
            if preset and "preset" in {spec.name for spec in reader.Options.specs()}:
                out[method] = {"preset": preset}
        return out

    def make(self, method: str) -> Runnable:
        if base_method(method) == MEMGPT:
            return MemGPTEval(self.pm.llm, self.pm.store, **self.method_options(method))
        opts = self.method_options(method)
        declared = {s.name for s in option_class(base_method(method)).specs()}
        # the papers' protocols score every answer (-O METHOD:abstain=on asks) and make the papers' calls: a
        # reordered re-ask would double a choice's accounted prompt tokens (-O METHOD:reorder=auto asks)
        opts = {**{k: v for k, v in PROTOCOL.items() if k in declared}, **opts}
        return self.pm.method(base_method(method), **opts)  # a choice resolves per document

    # --- running -----------------------------------------------------------------------------------
    def run(self) -> RunResult:
        methods = expand_methods(self.config.methods)
        spec = self.spec()
        examples = self.examples()
        runners = {m: self.make(m) for m in methods}  # option errors surface before anything is written
        if examples:
            metrics.score(examples[0], "", None)  # a metric's missing dependency surfaces before any LLM call
        self.raters = Raters(self.rater_llm or self.pm.llm) if self.config.raters or spec.primary == "judge" else None
        stored = self.dir.start({
            "dataset": spec.name, "methods": list(methods), "data": self.config.data,
            "params": dict(self.config.params), "limit": self.config.limit, "seed": self.config.seed,
            "budget": self.config.budget, "model": self.pm.llm.model_id, "raters": self.config.raters,
            "rater_model": (self.rater_llm or self.pm.llm).model_id if self.raters else None,
            "by_document": self.config.by_document, "primary": spec.primary, "dataset_notes": self.dataset_notes,
            **({"unanswerable": True} if self.config.unanswerable else {}),
            **({"short_answers": True} if self.config.short_answers else {}),
            **({"ids": list(self.config.ids)} if self.config.ids else {}),
            "method_options": {m: self.method_options(m) for m in methods},
            "commands": [self.command] if self.command else []}, widening=spec.widening)
        self.primary = spec.primary
        done = self.dir.latest(EXAMPLES)
        wanted = {e.id for e in examples}
        for record in done.values():  # running scores include the earlier part of the run
            if record.get("example_id") in wanted and record.get("method") in methods:
                self._note(record)
        result = RunResult(self.dir.path, stored, len(examples))
        by_doc: dict[str, list[Example]] = {}
        for e in examples:
            by_doc.setdefault(e.document_id, []).append(e)
        # one unit per document: its methods in order (ReadAgent-P/-S/GistMem share one memory, built by the first)
        units: list[list[tuple[str, list[Example]]]] = []
        for doc_examples in by_doc.values():
            unit = []
            for method in methods:
                pending = [e for e in doc_examples if self._pending(done.get(record_key(method, e.id)))]
                result.skipped += len(doc_examples) - len(pending)
                if pending:
                    unit.append((method, pending))
            if unit:
                units.append(unit)
        total = sum(len(p) for unit in units for _, p in unit)
        self._bar = _progress(total, f"{spec.name}", self.show_progress)
        workers = max(1, min(self.config.concurrency or self.pm.settings.concurrency,
                             self.pm.llm.backend.capabilities.max_concurrency, len(units) or 1))
        try:
            if workers == 1:
                for unit in units:
                    self._document(runners, unit, result)
            else:  # documents in parallel (a remote backend with several request slots)
                pool = ThreadPoolExecutor(max_workers=workers)
                try:
                    for future in as_completed([pool.submit(self._document, runners, u, result) for u in units]):
                        future.result()
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self._bar.close()
        return result

    def _document(self, runners: dict[str, Runnable], unit: list[tuple[str, list[Example]]],
                  result: RunResult) -> None:
        for method, pending in unit:
            self._unit(runners[method], method, pending, result)

    def _pending(self, record: dict[str, Any] | None) -> bool:
        return record is None or (self.config.retry_errors and record.get("status") == "error")

    def _unit(self, runner: Runnable, method: str, examples: list[Example],
              result: RunResult) -> None:
        """One document and one method: the memory once, then every question."""
        if isinstance(runner, MemGPTEval):
            for e in examples:
                self._answer(method, e, partial(runner.answer_example, e), result)
            return
        document = examples[0]
        source = document_of(document)  # what is read: a document, or every PDF of a library
        chosen = None
        if isinstance(runner, Chooser):  # auto: the reader it picks for this document, as `pagemind ask` would,
            runner, chosen = runner.resolve(source, self.pick_defaults(runner))  # with the set's preset for it
        key = record_key(method, document.document_id)
        # A build that a kill cut short resumes from its stored items: its cost here is only the remainder, so
        # the report must not take it for the whole build. A "started" record marks the attempt.
        earlier = self.dir.latest(BUILDS).get(key)
        resumed = earlier is not None and earlier.get("status") == "started"
        self.dir.append(BUILDS, {"key": key, "method": method, "document_id": document.document_id,
                                 "status": "started"})
        trace, t0 = Trace(), time.perf_counter()
        try:
            memory = runner.build(source, trace=trace)
        except FATAL:
            raise
        except Exception as err:  # recorded; the run goes on with the next unit
            self.dir.append(BUILDS, {"key": record_key(method, document.document_id), "method": method,
                                     "document_id": document.document_id, "status": "error", "error": _error(err),
                                     "usage": usage_of(trace), "wall_seconds": round(time.perf_counter() - t0, 2)})
            for e in examples:
                self._record(method, e, result, error=f"memory build failed: {_error(err)}")
            return
        self.dir.append(BUILDS, {
            "key": record_key(method, document.document_id), "method": method, "document_id": document.document_id,
            "status": "ok", "memory_key": memory.key, "reused": not trace.events,
            "resumed": resumed,
            "llm_built": runner.builds_with_llm,
            "usage": usage_of(trace), "wall_seconds": round(time.perf_counter() - t0, 2),
            "document_words": document.words, "document_tokens": self._document_tokens(document.document_id, source),
            "describe": runner.describe(memory),
            **({"chosen": chosen.said} if chosen else {})})
        for e in examples:
            self._answer(method, e, partial(_read, runner, memory, e, chosen, source), result)

    def _document_tokens(self, document_id: str, source: Document | Library) -> int:
        """The length of what is read, in the model's tokens (counted once per document)."""
        with self._lock:
            known = self._doc_tokens.get(document_id)
        if known is None:
            known = self.pm.llm.count_tokens(source.text)
            with self._lock:
                self._doc_tokens[document_id] = known
        return known

    def _answer(self, method: str, example: Example, call: Callable[[], Answer], result: RunResult) -> None:
        t0 = time.perf_counter()
        try:
            answer = call()
        except FATAL:
            raise
        except Exception as err:  # a failed example is recorded with its error
            self._record(method, example, result, error=_error(err), wall=time.perf_counter() - t0)
            return
        if self.config.short_answers and example.task == "qa":
            from .short import shorten

            try:
                shorten(self.pm.llm, answer)
            except FATAL:
                raise
            except Exception as err:  # the answer is kept and scored as given
                answer.fallbacks.append(f"short answer: the call failed ({_error(err)}); the answer as given is "
                                        "scored")
        self._record(method, example, result, answer=answer, wall=time.perf_counter() - t0)

    def _record(self, method: str, e: Example, result: RunResult, *, answer: Answer | None = None,
                error: str | None = None, wall: float = 0.0) -> None:
        record: dict[str, Any] = {
            "key": record_key(method, e.id), "example_id": e.id, "document_id": e.document_id, "method": method,
            "dataset": e.dataset, "task": e.task, "status": "error" if error else "ok", "error": error,
            "question": e.question[:500], "gold": _gold(e), "document_words": e.words, "meta": dict(e.meta),
            "wall_seconds": round(wall, 2), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if e.evidence:  # the labelled spans (character offsets into the example's document), also when it failed
            record["labels"] = [s.as_dict() for s in e.evidence]
        record["meta"].pop("judge", None)  # the judge prompt is the same for every example
        if answer is not None:
            record.update(self._scored(e, answer))
        self.dir.append(EXAMPLES, record)
        with self._lock:
            result.finished += 1
            result.errors += int(bool(error))
            self._note(record)
            self._bar.set_postfix_str(self.running_scores(), refresh=False)
            self._bar.update(1)  # redraws with the new running scores

    def _scored(self, e: Example, answer: Answer) -> dict[str, Any]:
        details = {k: v for k, v in answer.details.items() if k not in _DROP_DETAILS}
        short = answer.details.get("short")  # --short-answers: the phrase the answer gives is what is scored
        said = short or answer.stated  # a working's figures are not its answer
        out: dict[str, Any] = {
            "prediction": (short or answer.text)[:4000], "choice": answer.letter,
            "scores": metrics.score(e, said, answer.choice),
            "usage": usage_of(answer.trace), "pages_read": answer.pages_read, "lookups": len(answer.pages_read),
            "compression_rate": answer.compression_rate, "context_words": answer.context_words,
            "fallbacks": answer.fallbacks, "details": details,
            "citations": [c.as_dict() for c in answer.citations], "evidence": evidence_of(e, answer),
            "probability": answer.probability.as_dict()}  # its basis and, with samples, what they said
        if answer.support is not None:  # the draft is what is scored when the answer abstained
            out.update(support=answer.support.label, confidence=answer.confidence,
                       abstained=answer.abstained or answer.support.declined,
                       would_abstain=answer.would_abstain,
                       kind=kind_of(answer), signals=signals(answer))  # what a fitted confidence reads
            if answer.support.verdict is not None:
                out["verdict"] = answer.support.verdict.label
        if answer.abstained and answer.draft is not None:
            out["draft"] = answer.draft[:4000]
        if self.raters is None:
            return out
        try:
            judged: Judgement | None = None
            if e.meta.get("rater") == "longmemeval":
                judged = self.raters.longmemeval(str(e.meta.get("question_type")), str(e.meta.get("question")),
                                                 e.references[0], said, bool(e.meta.get("abstention")))
            elif e.meta.get("rater") == "mmlongbench":
                judged = self.raters.mmlongbench(e.question, str(e.meta.get("answer", e.references[0])),
                                                 str(e.meta.get("answer_format", "")), said)
            elif e.task == "open":
                judged = self.raters.judge(e.meta.get("judge"), str(e.meta.get("related_history", "")), e.question,
                                           said)
            elif self.config.raters and e.task in ("qa", "summary"):
                rating = self.raters.rate(e.question, said, e.references)
                out["scores"].update(rating.scores)
                out["rating"] = {"label": rating.label, "decisions": rating.decisions, "fallbacks": rating.fallbacks}
                out["rater_usage"] = usage_of(rating.trace)
            if judged is not None:
                out["scores"].update(judged.scores)
                out["rating"] = judged.as_dict()
                out["rater_usage"] = usage_of(judged.trace)
        except FATAL:
            raise
        except Exception as err:  # the answer stands; its rating is missing and says why
            out["rater_error"] = _error(err)
        return out

    # --- progress ----------------------------------------------------------------------------------
    def _note(self, record: dict[str, Any]) -> None:
        value = primary_value(record, self.primary)
        if value is not None:
            self._scores.setdefault(record["method"], []).append(value)

    def running_scores(self) -> str:
        return " ".join(f"{m} {sum(v) / len(v):.3f}" for m, v in self._scores.items() if v)


def primary_value(record: dict[str, Any], primary: str) -> float | None:
    """The headline score of a record; a failed example scores 0 (it is counted, never dropped)."""
    if record.get("status") == "error":
        return 0.0
    value = (record.get("scores") or {}).get(primary)
    return None if value is None else float(value)


def _read(reader: Reader[Any, Any], memory: Any, example: Example, chosen: Chosen | None = None,
          source: Document | Library | None = None) -> Answer:
    """``reader``'s answer to ``example`` from ``memory`` (the question parsed when it is asked), cited in
    ``source`` — named, not left to the reader's memory of the few documents it read last, which concurrent units
    of other documents push out; a choice's pick is named in ``details["auto"]``, as
    :meth:`pagemind.Pagemind.ask` names it."""
    answer = reader.answer(memory, example.as_question(), document=source)
    if chosen is not None:
        answer.details["auto"] = chosen.said
    return answer


def evidence_of(e: Example, answer: Answer) -> dict[str, Any]:
    """How the answer's citations meet the example's evidence labels (recall, precision), or, for a
    multiple-choice answer, the support proxy (see :mod:`.evidence`); empty when neither applies."""
    out: dict[str, Any] = {}
    if e.evidence:  # asked of a library, only citations of the question's own document can hit its labels
        own = Document.from_text(e.document).id if e.library else None
        out.update(evidence_scores(e.document, e.evidence, answer.citations, own))
    if e.task == "choice" and e.options:
        chosen = e.options[answer.choice] if answer.choice is not None and answer.choice < len(e.options) else None
        out["support"] = support_proxy(chosen, answer.citations)
    return out


def _gold(e: Example) -> str:
    if e.task == "choice" and e.gold is not None:
        return f"({'ABCDEFGHIJ'[e.gold]}) {e.options[e.gold]}"[:500]
    return (e.references[0] if e.references else "")[:500]


class _NoBar:
    def update(self, n: int) -> None: ...
    def set_postfix_str(self, s: str, refresh: bool = True) -> None: ...
    def close(self) -> None: ...


def _progress(total: int, label: str, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="q", file=sys.stderr, dynamic_ncols=True)


__all__ = ["ALL_METHODS", "EvalConfig", "RunResult", "Runner", "evidence_of", "expand_methods", "primary_value",
           "select", "usage_of"]
