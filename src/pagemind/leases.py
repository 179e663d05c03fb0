"""Leases: one holder at a time for a named job, across threads, processes and server replicas sharing a store.

A memory's build holds the lease ``build:<memory key>``: a second process (or thread, or replica) asked for the
same memory waits for it and then loads what the first built, instead of building it twice. A holder that is
gone — its pid no longer exists on this host, or it has not refreshed the lease for ``stale_after`` seconds
(another host, killed) — is taken over, and the build resumes from the items it stored.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .errors import PagemindError
from .processes import HOST, pid_alive
from .store import LockHolder, SQLStore

STALE_AFTER = 300.0  # seconds without a refresh before a holder on another host counts as gone


def holder_gone(stale_after: float) -> Callable[[LockHolder], bool]:
    """A predicate telling whether a lock or lease holder is gone: on this host its pid no longer exists;
    anywhere, its last refresh is older than ``stale_after`` seconds."""

    def gone(holder: LockHolder) -> bool:
        if holder.host == HOST and not pid_alive(holder.pid):
            return True
        return time.time() - holder.refreshed > stale_after

    return gone


class LeaseBusy(PagemindError):
    """A live holder kept the lease past the taker's timeout."""

    def __init__(self, name: str, holder: LockHolder | None) -> None:
        who = f"pid {holder.pid} on {holder.host}" if holder is not None else "another holder"
        super().__init__(f"{name} is held by {who}; try again later")
        self.holder = holder


class Lease:
    """``with lease.held(on_wait=...):`` takes the lease (waiting while a live holder has it); ``refresh()`` says
    the holder is alive (throttled to once every few seconds, so it can be called on every progress report)."""

    def __init__(self, store: SQLStore, name: str, *, stale_after: float = STALE_AFTER, poll: float = 0.2,
                 refresh_every: float = 5.0, timeout: float | None = None) -> None:
        self.store = store
        self.name = name
        self.stale_after = stale_after
        self.poll = poll
        self.refresh_every = refresh_every
        self.timeout = timeout  # seconds to wait for a live holder before LeaseBusy (None: wait as long as it lives)
        self.owner = ""
        self._refreshed = 0.0

    def holder(self) -> LockHolder | None:
        """The live holder of the lease; None when it is free or its holder is gone (dead, or silent for
        ``stale_after`` seconds): a gone holder's lease is the next taker's, so nothing is busy behind it."""
        held = self.store.lease_holder(self.name)
        return None if held is None or holder_gone(self.stale_after)(held) else held

    @contextmanager
    def held(self, on_wait: Callable[[LockHolder], None] | None = None) -> Iterator[Lease]:
        owner = uuid.uuid4().hex
        gone = holder_gone(self.stale_after)
        told = False
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while not self.store.try_lease(self.name, owner, os.getpid(), HOST, gone):
            if on_wait is not None and not told:
                holder = self.store.lease_holder(self.name)
                if holder is not None:
                    on_wait(holder)
                    told = True
            if deadline is not None and time.monotonic() > deadline:
                raise LeaseBusy(self.name, self.store.lease_holder(self.name))
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
