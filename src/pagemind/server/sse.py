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
from ..runs import ENDED, settled
from ..store.base import RunRow, StepRow, StoreBackend
from .service import step_json
from .shapes import MAX_ID, run_json

KEEPALIVE = ": keep-alive\n\n"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def event(kind: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def resume_point(last_event_id: str | None, after: int | None) -> int:
    """The seq after which to stream: ``Last-Event-ID`` (a reconnecting client) over ``?after=``, else -1. A
    ``Last-Event-ID`` that is not a seq (an integer from -1 to 2^63-1) is an :class:`InputError` (422)."""
    if last_event_id is not None:
        value = last_event_id.strip()
        if not value.lstrip("-").isdigit() or len(value) > 20 or not -1 <= int(value) <= MAX_ID:
            raise InputError(f"Last-Event-ID {last_event_id[:40]!r}: a step's seq, from -1 to {MAX_ID}")
        return int(value)
    return -1 if after is None else after


async def run_events(store: StoreBackend, run_id: str, after: int = -1, keepalive: float = 15.0,
                     poll: tuple[float, float] = (0.02, 0.25)) -> AsyncIterator[str]:
    """The run's steps after ``after`` as SSE text, then ``end``. Polls the store (quickly while steps arrive,
    up to ``poll[1]`` s apart while none do)."""
    import anyio
    from starlette.concurrency import run_in_threadpool

    def read(since: int, check: bool) -> tuple[RunRow | None, list[StepRow]]:
        run = store.get_run(run_id)  # the status first: a run that has ended has written all its steps
        if run is not None and check:  # a run whose process stopped ends the stream as failed
            run = settled(store, run)
        return run, store.run_steps(run_id, since)

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
