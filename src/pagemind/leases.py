"""Leases: one holder at a time for a named job, across threads, processes and server replicas sharing a store.

A memory's build holds the lease ``build:<memory key>``: a second process (or thread, or replica) asked for the
same memory waits for it and then loads what the first built, instead of building it twice. A holder that is
gone — its pid no longer exists on this host, or it has not refreshed the lease for ``stale_after`` seconds
(another host, killed) — is taken over, and the build resumes from the items it stored.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .store import LockHolder, StoreBackend

HOST = socket.gethostname()
STALE_AFTER = 300.0  # seconds without a refresh before a holder on another host counts as gone


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (a zombie, exited but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def holder_gone(stale_after: float) -> Callable[[LockHolder], bool]:
    """A predicate telling whether a lock or lease holder is gone: on this host its pid no longer exists;
    anywhere, its last refresh is older than ``stale_after`` seconds."""

    def gone(holder: LockHolder) -> bool:
        if holder.host == HOST and not pid_alive(holder.pid):
            return True
        return time.time() - holder.refreshed > stale_after

    return gone


class Lease:
    """``with lease.held(on_wait=...):`` takes the lease (waiting while a live holder has it); ``refresh()`` says
    the holder is alive (throttled to once every few seconds, so it can be called on every progress report)."""

    def __init__(self, store: StoreBackend, name: str, *, stale_after: float = STALE_AFTER, poll: float = 0.2,
                 refresh_every: float = 5.0) -> None:
        self.store = store
        self.name = name
        self.stale_after = stale_after
        self.poll = poll
        self.refresh_every = refresh_every
        self.owner = ""
        self._refreshed = 0.0

    @contextmanager
    def held(self, on_wait: Callable[[LockHolder], None] | None = None) -> Iterator[Lease]:
        owner = uuid.uuid4().hex
        gone = holder_gone(self.stale_after)
        told = False
        while not self.store.try_lease(self.name, owner, os.getpid(), HOST, gone):
            if on_wait is not None and not told:
                holder = self.store.lease_holder(self.name)
                if holder is not None:
                    on_wait(holder)
                    told = True
            time.sleep(self.poll)
        self.owner, self._refreshed = owner, time.monotonic()
        try:
            yield self
        finally:
            self.store.release_lease(self.name, owner)
            self.owner = ""

    def refresh(self) -> None:
        if self.owner and time.monotonic() - self._refreshed >= self.refresh_every:
            self._refreshed = time.monotonic()
            self.store.refresh_lease(self.name, self.owner)
