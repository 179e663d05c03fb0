"""Server-sent events of a run, read back from the store: every step as ``id: <seq>`` / ``event: <kind>`` /
``data: <step JSON>``, a ``: keep-alive`` comment whenever nothing was sent for ``keepalive`` seconds, and a last
``event: end`` carrying the run. Resuming after step N (``Last-Event-ID: N``) needs nothing but the store, so a
stream may continue on another process or after a restart."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import InputError
from ..runs import ENDED, Runs
from .shapes import MAX_ID, run_json, step_json

KEEPALIVE = ": keep-alive\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def event(kind: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def resume_point(last_event_id: str | None, after: int | None) -> int:
    """The seq after which to stream: ``Last-Event-ID`` (a reconnecting client) over ``?after=``, else -1. A seq
    past the largest a store holds means "after every step": the stream sends only its ``end``. A
    ``Last-Event-ID`` that is not an integer from -1 up is an :class:`InputError` (422)."""
    if last_event_id is not None:
        value = last_event_id.strip()
        if value != "-1" and not (value.isdigit() and value.isascii()):
            raise InputError(f"Last-Event-ID {last_event_id[:40]!r}: a step's seq (an integer from -1)")
        return min(int(value), MAX_ID)
    return -1 if after is None else after


async def run_events(runs: Runs, run_id: str, after: int = -1, keepalive: float = 15.0,
                     poll: tuple[float, float] = (0.02, 0.25)) -> AsyncIterator[str]:
    """The run's steps after ``after`` as SSE text, then ``end``. Polls the runs (``Pagemind.runs``; quickly
    while steps arrive, up to ``poll[1]`` s apart while none do)."""
    import anyio
    from starlette.concurrency import run_in_threadpool

    def read(since: int, check: bool) -> tuple[Any, list[Any]]:
        run = runs.peek(run_id)  # the status first: a run that has ended has written all its steps
        if run is not None and check:  # a run whose process stopped ends the stream as failed
            run = runs.settled(run)
        return run, runs.steps(run_id, since)

    wait = poll[0]
    sent = checked = time.monotonic()
    while True:
        check = time.monotonic() - checked >= 1.0
        checked = time.monotonic() if check else checked
        run, steps = await run_in_threadpool(read, after, check)
        for step in steps:
            yield event(step.kind, step_json(step), step.seq)
            after = step.seq
        if run is None or run.status in ENDED:
            yield event("end", run_json(run) if run is not None else {"id": run_id, "status": "gone"})
            return
        now = time.monotonic()
        if steps:
            sent, wait = now, poll[0]
        else:
            if now - sent >= keepalive:
                yield KEEPALIVE
                sent = now
            wait = min(wait * 2, poll[1])
        await anyio.sleep(min(wait, max(0.0, keepalive - (now - sent)) or wait))
