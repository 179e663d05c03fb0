"""Consolidation while idle: which agents are due a background pass.

An agent opts in with its ``consolidate_idle`` option (minutes). It is due when its newest event is at least that
old and came after its last pass (:data:`pagemind.agent.consolidate.MARK`) and after the last attempt this process
made (``tried``: a pass that found nothing to read, or whose model answered nothing usable, is not made again until
something new is said). ``pagemind serve`` looks every minute and runs each due agent's pass in the agent's line, under
the lease ``consolidate:<id>`` so replicas never run one twice; ``pagemind agent memory consolidate --watch`` does the
same for one agent from the command line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..store import Page
from .consolidate import MARK
from .memory import CLOCK

if TYPE_CHECKING:
    from ..store import AgentRow, SQLStore

PAGE = 500  # agents read at once while looking


def lease_name(agent_id: int) -> str:
    return f"consolidate:{agent_id}"


@dataclass(frozen=True)
class Due:
    """An agent due a pass: its row, its newest event's seq and how many minutes ago that was."""

    row: AgentRow
    newest: int
    minutes: float


def due(store: SQLStore, row: AgentRow, now: datetime, tried: Mapping[int, int] | None = None,
        minutes: int | None = None) -> Due | None:
    """Whether ``row``'s agent is due a pass at ``now`` (``minutes``: its idle time instead of its option)."""
    wait = int(row.settings.get("consolidate_idle") or 0) if minutes is None else minutes
    if wait <= 0:
        return None
    newest = store.recent_agent_events(row.id, 1)
    if not newest:
        return None
    last = newest[-1]
    done = max(int((row.state.get("extra") or {}).get(MARK, 0)), (tried or {}).get(row.id, 0))
    if last.seq <= done:
        return None
    try:
        since = (now - datetime.strptime(last.created[:19], CLOCK)).total_seconds() / 60
    except ValueError:  # an imported event's time the clock format does not read: not judged idle
        return None
    return Due(row, last.seq, since) if since >= wait else None


def due_agents(store: SQLStore, now: datetime, tried: Mapping[int, int] | None = None) -> Iterator[Due]:
    """Every agent of every user due a pass at ``now``, by id, read a page of agents at a time."""
    for row in Page.walk(lambda after: Page.read(lambda n: store.agents_by_id(after, n), PAGE, lambda r: r.id)):
        found = due(store, row, now, tried)
        if found is not None:
            yield found
