"""One turn at a time per agent, across threads and processes, without ever blocking on a dead holder.

The lock is the lease ``agent:<id>`` (holder token, pid, host, last refresh; see ``leases``). A gone holder is
detected two ways: on the same host its pid no longer exists; anywhere, its last refresh is older than
``stale_after`` seconds (a turn refreshes the lock before every step).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import PagemindError
from ..leases import HOST, holder_gone
from .store import AgentStore


class AgentBusy(PagemindError):
    """Another process or thread is in a turn with this agent and did not finish in time."""


class TurnLock:
    """The per-agent lock; ``with lock.held(): ...`` around a turn, ``lock.refresh()`` before each step."""

    def __init__(self, store: AgentStore, agent_id: int, *, timeout: float = 120.0, stale_after: float = 900.0,
                 poll: float = 0.05) -> None:
        self.store = store
        self.agent_id = agent_id
        self.timeout = timeout
        self.stale_after = stale_after
        self.poll = poll
        self.owner = ""

    @contextmanager
    def held(self) -> Iterator[None]:
        owner = uuid.uuid4().hex
        deadline = time.monotonic() + self.timeout
        gone = holder_gone(self.stale_after)
        while not self.store.try_lock(self.agent_id, owner, os.getpid(), HOST, gone):
            if time.monotonic() > deadline:
                holder = self.store.lock_holder(self.agent_id)
                who = f"pid {holder[1]} on {holder[2]}" if holder else "another turn"
                raise AgentBusy(f"agent is busy ({who} holds its turn lock); try again later")
            time.sleep(self.poll)
        self.owner = owner
        try:
            yield
        finally:
            self.store.release_lock(self.agent_id, owner)
            self.owner = ""

    def refresh(self) -> None:
        if self.owner:
            self.store.refresh_lock(self.agent_id, self.owner)
