"""One turn at a time per agent, across threads and processes, without ever blocking on a dead holder.

The lock is the lease ``agent:<id>`` (:class:`pagemind.leases.Lease`: holder token, pid, host, last refresh). A
gone holder is detected two ways: on the same host its pid no longer exists; anywhere, its last refresh is older
than ``stale_after`` seconds (a turn refreshes the lock before every step). Any taker takes a gone holder's lock
over, so a process killed mid-turn never leaves the agent refusing turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import PagemindError
from ..leases import Lease, LeaseBusy
from ..store import LockHolder, SQLStore


class AgentBusy(PagemindError):
    """The agent is in a turn (in this process's line, or another process holds its lock) and the caller could not
    wait (409); ``run_id``: the run of that turn, when known."""

    def __init__(self, message: str, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class TurnLock(Lease):
    """The per-agent lease; ``with lock.held(): ...`` around a turn, ``lock.refresh()`` before each step."""

    def __init__(self, store: SQLStore, agent_id: int, *, timeout: float = 120.0, stale_after: float = 900.0,
                 poll: float = 0.05) -> None:
        super().__init__(store, f"agent:{agent_id}", stale_after=stale_after, poll=poll, refresh_every=1.0,
                         timeout=timeout)

    @contextmanager
    def held(self, on_wait: Callable[[LockHolder], None] | None = None) -> Iterator[Lease]:
        try:
            with super().held(on_wait) as lease:
                yield lease
        except LeaseBusy as err:
            raise AgentBusy(f"agent is busy ({err}); try again later") from None


__all__ = ["AgentBusy", "TurnLock"]
