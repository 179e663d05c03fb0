"""Where the server's runs execute: a bounded thread pool, and one FIFO line per agent.

An agent's turns (and the jobs that must not interleave with them: block edits, document loads) wait in the
agent's line and run one at a time, in the order they arrived; different agents' lines run in parallel on the
pool. The agent's turn lock in the store still serialises turns across processes; the line only keeps this
process's sends in order and tells a ``wait=false`` caller which run is in the way.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..agent.locks import AgentBusy
from ..runs import Runs


@dataclass
class _Line:
    pending: deque[tuple[str | None, Callable[[], Any], Future]] = field(default_factory=deque)
    running: str | None = None  # the run id of the job being executed (None: a job without a run)


class Workers:
    """A thread pool of ``size`` workers for runs, with per-agent lines; ``runs``: where the runs are recorded
    (``Pagemind.runs``)."""

    def __init__(self, runs: Runs, size: int = 16) -> None:
        self.runs = runs
        self.size = size
        self.pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="pagemind-run")
        self._lock = threading.Lock()
        self._lines: dict[int, _Line] = {}

    def submit(self, run_id: str | None, job: Callable[[], Any]) -> Future:
        """Run ``job`` on the pool (a run that is not an agent's turn)."""
        return self.pool.submit(self._guarded, run_id, job)

    def enqueue(self, agent_id: int, prepare: Callable[[], tuple[str | None, Callable[[], Any]]], *,
                wait: bool = True) -> tuple[str | None, Future]:
        """Put a job at the end of the agent's line: ``prepare()`` makes it (and its run, if any) and returns
        ``(run id, job)``. With ``wait=False`` and the line not empty, raise :class:`AgentBusy` naming the
        running run instead, before anything is prepared."""
        with self._lock:
            line = self._lines.get(agent_id)
            if line is not None and not wait:
                first = line.running or next((r for r, _, _ in line.pending if r), None)
                raise AgentBusy("the agent is in a turn; send again later, or without wait=false to queue", first)
            run_id, job = prepare()
            start = line is None
            if line is None:
                line = self._lines[agent_id] = _Line()
            future: Future = Future()
            line.pending.append((run_id, job, future))
        if start:
            self.pool.submit(self._drain, agent_id)
        return run_id, future

    def busy(self, agent_id: int) -> tuple[bool, str | None]:
        """(the agent has work in this process, the run id of the turn running or first in line)."""
        with self._lock:
            line = self._lines.get(agent_id)
            if line is None:
                return False, None
            return True, line.running or next((r for r, _, _ in line.pending if r), None)

    def _drain(self, agent_id: int) -> None:
        while True:
            with self._lock:
                line = self._lines[agent_id]
                if not line.pending:
                    del self._lines[agent_id]
                    return
                run_id, job, future = line.pending.popleft()
                line.running = run_id
            if not future.set_running_or_notify_cancel():
                with self._lock:
                    line.running = None
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = self._guarded(run_id, job)
            except BaseException as err:  # handed to whoever waits on the future
                error = err
            with self._lock:  # the line is free before its waiter hears: a request sent on the answer finds it so
                line.running = None
                finished = not line.pending
                if finished:  # a job enqueued from now on starts a line (and a drain) of its own
                    del self._lines[agent_id]
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
            if finished:
                return

    def _guarded(self, run_id: str | None, job: Callable[[], Any]) -> Any:
        """Run a job; a run that failed before it started (refused options, a vanished document) is marked
        failed instead of staying queued for ever."""
        try:
            return job()
        except BaseException as err:
            if run_id is not None:
                self.runs.fail_unstarted(run_id, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
            raise

    def shutdown(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
