"""Recorded runs: every index build, answer and agent turn, with its steps as they happen.

A run is a row in the store (who, what, status, timestamps, result) and an ordered list of steps: each LLM call
(role, tokens, seconds, cached, the reply), the decision made of it, the phases the method went through, an
agent's steps (thoughts, function call, result) and the final result. Steps are written while the run goes on, so
another process (``pagemind logs show``, the server's event stream) can follow a run from the store alone. A step
is a typed value of :mod:`pagemind.steps`, which also words it (one JSON form and one line) for every client.

A queued or running run is held by the process that created and runs it: the lease ``run:<id>``
(:mod:`pagemind.leases`), taken before the run is created and released after it ended. A run still queued or
running whose holder is gone — its pid no longer exists on this host, or (Postgres) its connection to the database
closed — was interrupted (a replica killed, a machine lost): :meth:`Runs.get` and :meth:`Runs.list` (and the
server's event stream) mark it failed with :data:`INTERRUPTED` when they read it, so no run waits for ever. Time
alone never ends a run: a long LLM call is not a dead process.
"""

from __future__ import annotations

import builtins
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .errors import PagemindError
from .llm.usage import Trace, TraceEvent
from .steps import Decision, Error, LLMCall, Note, Phase, Step, data, from_row
from .store import RunRow, SQLStore, StepRow

STATUSES = ("queued", "running", "done", "failed", "cancelled")
ENDED = ("done", "failed", "cancelled")
REPLY_CHARS = 4000  # an LLM reply is kept up to this many characters in its step
INTERRUPTED = "interrupted: the process running it stopped"
HOLDER = uuid.uuid4().hex  # this process, as the holder of its runs' leases


class RunCancelled(PagemindError):
    """The run was cancelled (``pagemind`` stops at its next step; a build resumes later like a killed one)."""


class RunsQueued(PagemindError):
    """A user has as many runs of a kind waiting as one may (e.g. uploads read in the background): 429, try later."""


class RunExists(PagemindError):
    """A run with the id asked for already exists (two attempts of one idempotent request met)."""


KINDS = ("index", "ask", "turn", "consolidate", "read")  # a memory built, a question, an agent's turn, an agent's
# pass, an upload read in the background (its target the upload's name until the result names the document)
AGENT_RUNS = ("turn", "consolidate")  # the kinds whose target is an agent


def new_run_id() -> str:
    return "run_" + secrets.token_hex(8)


class Runs:
    """The runs of one store."""

    def __init__(self, store: SQLStore) -> None:
        self.store = store

    def create(self, kind: str, target: str, *, method: str | None = None, request: dict[str, Any] | None = None,
               user_id: int | None = None, run_id: str | None = None) -> RunRow:
        """A new queued run (``run_id``: a chosen id; :class:`RunExists` when that run already exists)."""
        from .leases import HOST

        run = RunRow(run_id or new_run_id(), user_id, kind, method, target, dict(request or {}), "queued", time.time())
        if run_id is not None and self.store.get_run(run_id) is not None:
            raise RunExists(f"run {run_id} exists")
        # held before it exists: a reader never sees it queued without a holder
        if not self.store.try_lease(f"run:{run.id}", HOLDER, os.getpid(), HOST, lambda holder: run_id is None):
            raise RunExists(f"run {run_id} is being created by another process")
        try:
            self.store.create_run(run)
        except Exception:
            if run_id is not None and self.store.get_run(run_id) is not None:
                raise RunExists(f"run {run_id} exists") from None
            self.store.release_lease(f"run:{run.id}", HOLDER)
            raise
        return run

    def get(self, run_id: str, user_id: int | None = None) -> RunRow | None:
        """The run, or None when there is none or it is another user's (an interrupted one reported failed)."""
        run = self.store.get_run(run_id)
        return settled(self.store, run) if run is not None and run.user_id == user_id else None

    def list(self, user_id: int | None = None, **filters: Any) -> list[RunRow]:
        """Runs newest first (``kind``, ``target``, ``status``, ``limit``, ``offset``, ``all_users``); queued and
        running runs whose process stopped are marked failed first (a ``status="running"`` filter omits them)."""
        looked = {k: v for k, v in filters.items() if k in ("all_users", "kind", "target")}
        for status in {None: ("queued", "running")}.get(filters.get("status"), (filters.get("status"),)):
            if status in ("queued", "running"):
                for run in self.store.list_runs(user_id, status=status, limit=1000, **looked):
                    settled(self.store, run)
        return self.store.list_runs(user_id, **filters)

    def peek(self, run_id: str) -> RunRow | None:
        """The run as stored, whoever's it is, not settled: for a caller that checked ownership already and polls
        (settling reads the run's lease; :meth:`settled` does it when the poller chooses)."""
        return self.store.get_run(run_id)

    def settled(self, run: RunRow) -> RunRow:
        """``run``, marked failed with :data:`INTERRUPTED` first when it is queued or running and its process is
        gone (see :func:`settled`)."""
        return settled(self.store, run)

    def steps(self, run_id: str, after: int = -1, limit: int | None = None) -> builtins.list[StepRow]:
        return self.store.run_steps(run_id, after, limit)

    def fail_unstarted(self, run_id: str, error: str) -> bool:
        """Mark a run that failed before it started (refused options, a vanished document) failed with ``error``
        and release this process's hold on it, so it does not stay queued for ever; False (nothing changed) when
        it is gone or no longer queued."""
        run = self.store.get_run(run_id)
        if run is None or run.status != "queued":
            return False
        self.store.update_run(run_id, status="failed", finished=time.time(), error=error)
        self.store.release_lease(f"run:{run_id}", HOLDER)
        return True

    def cancel(self, run_id: str) -> bool:
        """Ask a queued or running run to stop at its next step; False when it has ended."""
        return self.store.request_cancel(run_id)

    def recorder(self, run: RunRow | str, telemetry: Any = None) -> Recorder:
        return Recorder(self.store, run if isinstance(run, str) else run.id, telemetry=telemetry)


def settled(store: SQLStore, run: RunRow) -> RunRow:
    """The run, marked failed with :data:`INTERRUPTED` first when it is queued or running and its process is gone
    (its lease ``run:<id>`` can be taken). Cheap for a run held by a live process on this host: one read."""
    if run.status not in ("queued", "running"):
        return run
    from .leases import HOST, holder_gone

    name = f"run:{run.id}"
    gone = holder_gone(float("inf"))  # time alone never ends a run: only a holder known to be dead
    holder = store.lease_holder(name)
    if holder is not None and holder.host == HOST and not gone(holder):
        return run
    owner = uuid.uuid4().hex
    if not store.try_lease(name, owner, os.getpid(), HOST, gone):
        return run  # its holder is alive (elsewhere: a Postgres store checks its connection)
    try:
        now = store.get_run(run.id)  # it may have ended between the first read and the lease
        if now is None or now.status not in ("queued", "running"):
            return now or run
        store.append_run_step(run.id, Error.kind, data(Error(error=INTERRUPTED, type="Interrupted")), time.time())
        store.update_run(run.id, status="failed", finished=time.time(), error=INTERRUPTED)
        return store.get_run(run.id) or run
    finally:
        store.release_lease(name, owner)


def call_step(event: TraceEvent) -> LLMCall:
    reply = event.reply if len(event.reply) <= REPLY_CHARS else event.reply[:REPLY_CHARS] + " [...]"
    return LLMCall(role=event.role, prompt_tokens=event.prompt_tokens, completion_tokens=event.completion_tokens,
                   seconds=round(event.seconds, 3), cached=event.cached, reply=reply, decision=event.decision or None)


class Recorder:
    """Writes one run's steps and status as they happen (thread-safe: LLM calls may run in a pool).

    ``trace()`` is a :class:`Trace` whose calls, decisions and notes become steps; ``progress`` is a progress
    callback whose phases become steps (a phase is recorded when its name changes, or at most once a second);
    both stop the run with :class:`RunCancelled` once a cancel was requested.
    """

    def __init__(self, store: SQLStore, run_id: str, poll: float = 0.5, telemetry: Any = None) -> None:
        self.store = store
        self.run_id = run_id
        self.telemetry = telemetry  # a pagemind.telemetry.Telemetry: the run and its calls as OpenTelemetry spans
        self._span: Any = None
        self._poll = poll
        self._checked = 0.0
        self._phase: tuple[str, float] = ("", 0.0)
        self._calls: dict[int, int] = {}  # id(event) -> its step's seq, to link a decision to its call
        self._lock = threading.Lock()

    def record(self, step: Step) -> int:
        """Write a step (a typed value of :mod:`pagemind.steps`); its seq in the run."""
        return self.store.append_run_step(self.run_id, step.kind, data(step), time.time())

    def step(self, kind: str, **values: Any) -> int:
        """Write a step given as its kind and stored data."""
        return self.store.append_run_step(self.run_id, kind, values, time.time())

    def trace(self, into: Trace | None = None) -> Trace:
        """A trace whose calls, decisions and notes become steps: ``into`` (the caller's, which then also keeps
        them) or a new one."""
        if into is None:
            return Trace(listener=self._hear)
        into.listener = self._hear
        return into

    def _hear(self, kind: str, item: Any) -> None:
        if kind == "call":
            if self._span is not None:
                self.telemetry.call_span(self._span, item)
            seq = self.record(call_step(item))
            with self._lock:
                self._calls[id(item)] = seq
        elif kind == "decision":
            event, decision = item
            with self._lock:
                call = self._calls.get(id(event))
            self.record(Decision(decision=decision, role=event.role, call=call))
        else:
            self.record(Note(text=str(item)))
        self.check()

    def progress(self, phase: str, done: int, total: int, unit: str) -> None:
        now = time.monotonic()
        last, when = self._phase
        if phase != last or now - when >= 1.0 or (total and done >= total):
            self._phase = (phase, now)
            self.record(Phase(phase=phase, done=done, total=total, unit=unit))
        self.check()

    def watch(self, on_text: Callable[[str], None] | None) -> Callable[[str], None]:
        """``on_text`` (or nothing) behind a cancel check at each piece of a streamed reply: a cancelled run stops
        in the middle of its answer call (the backend's stream is closed), not only between calls."""
        def heard(piece: str) -> None:
            self.check()
            if on_text is not None:
                on_text(piece)

        return heard

    def check(self, now: bool = False) -> None:
        """Raise :class:`RunCancelled` if a cancel was requested or the run was erased (reads the store at most
        every ``poll`` s; ``now``: this time whenever it last looked, before a step that cannot be undone)."""
        at = time.monotonic()
        if not now and at - self._checked < self._poll:
            return
        self._checked = at
        run = self.store.get_run(self.run_id)
        if run is None:
            raise RunCancelled(f"run {self.run_id} is gone (its user's data was erased)")
        if run.cancel_requested:
            raise RunCancelled(f"run {self.run_id} was cancelled")

    @contextmanager
    def running(self) -> Iterator[Recorder]:
        """Mark the run running; at the end done (a result must have been set with :meth:`result`), failed with
        the error, or cancelled. The error is raised again. This process holds the run's lease until it ended
        (see the module; taken again here for a run created by another process)."""
        from .leases import HOST

        name = f"run:{self.run_id}"
        self.store.try_lease(name, HOLDER, os.getpid(), HOST, lambda holder: True)
        try:
            with self._running():
                yield self
        finally:
            self.store.release_lease(name, HOLDER)

    @contextmanager
    def _running(self) -> Iterator[Recorder]:
        self.store.update_run(self.run_id, status="running", started=time.time())
        if self.telemetry is not None:
            run = self.store.get_run(self.run_id)
            self._span = self.telemetry.run_span(self.run_id, run.kind if run else "", run.method if run else None)
        self._checked = 0.0
        status, error = "done", None
        try:
            self.check()
            yield self
        except RunCancelled as err:
            status, error = "cancelled", str(err)
            self.record(Error(error=error, type="RunCancelled"))
            self.store.update_run(self.run_id, status="cancelled", finished=time.time(), error=error,
                                  usage=self.totals())
            raise
        except BaseException as err:
            status, error = "failed", f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            self.record(Error(error=error, type=type(err).__name__))
            self.store.update_run(self.run_id, status="failed", finished=time.time(), error=error,
                                  usage=self.totals())
            raise
        finally:
            if self._span is not None:
                self.telemetry.end(self._span, status, error)
                self._span = None

    def result(self, result: dict[str, Any]) -> None:
        """The run's result: recorded as its last step and on the run, which is then done (its span counts the
        result's citations and carries its support label, confidence and whether it abstained)."""
        if self._span is not None and isinstance(result.get("citations"), list):
            self._span.set_attribute("pagemind.citations", len(result["citations"]))
        support = result.get("support")
        if self._span is not None and isinstance(support, dict):
            self._span.set_attribute("pagemind.answering.support", str(support.get("label")))
            self._span.set_attribute("pagemind.confidence", float(support.get("confidence") or 0.0))
            self._span.set_attribute("pagemind.abstained", bool(result.get("abstained")))
        self.step("result", **result)
        self.store.update_run(self.run_id, status="done", finished=time.time(), result=result, usage=self.totals())

    def totals(self) -> dict[str, Any]:
        """The run's calls, tokens and seconds over every step recorded (read once, when it ends)."""
        return summarize(self.store.run_steps(self.run_id))


def summarize(steps: list[StepRow]) -> dict[str, Any]:
    """Calls, tokens and seconds of a run's recorded LLM calls (cached calls cost nothing)."""
    calls = [s for s in map(from_row, steps) if isinstance(s, LLMCall)]
    paid = [c for c in calls if not c.cached]
    return {"calls": len(calls), "cached_calls": len(calls) - len(paid),
            "prompt_tokens": sum(c.prompt_tokens for c in paid),
            "completion_tokens": sum(c.completion_tokens for c in paid),
            "seconds": round(sum(c.seconds for c in paid), 3)}

