"""A user's runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import NotFound
from ...limits import MAX_LIST
from ...runs import summarize
from ...store import Page
from ..views import CitedPlace, CitedSpan
from .base import ServiceBase

if TYPE_CHECKING:
    from ...store import (
        RunRow,
        StepRow,
        UserRow,
    )


CONTEXT_CHARS = 600  # a cited span is shown with its paragraphs, at most this many characters either side


class RunOps(ServiceBase):
    """A user's runs: listed, read with their steps and usage, their citations in place."""

    def current_run(self, run: RunRow) -> RunRow:
        """A run as it is now (its live state, e.g. the progress of a build), from the run the caller holds."""
        return self.pm.runs.peek(run.id) or run

    def runs(self, user: UserRow, *, kind: str | None = None, status: str | None = None, target: str | None = None,
             limit: int = 50, offset: int = 0, after: str | None = None) -> Page[RunRow]:
        """One page of the user's runs, newest first: those after their run ``after`` (or past ``offset``)."""
        if after is not None and self.find_run(user, after) is None:
            raise NotFound(f"after: you have no run {after!r} to list after")
        return Page.read(lambda n: self.pm.runs.list(user.id, kind=kind, status=status, target=target, limit=n,
                                                     offset=offset, after=after), limit, lambda r: r.id)

    def run(self, user: UserRow, run_id: str) -> tuple[RunRow, dict[str, Any]]:
        """One of the user's runs and its usage over every step (kept on a run that ended; summed while it runs)."""
        run = self.own_run(user, run_id)
        return run, self.usage(run)

    def usage(self, run: RunRow) -> dict[str, Any]:
        return run.usage if run.usage is not None else summarize(self.pm.runs.steps(run.id))

    def steps(self, user: UserRow, run_id: str, after: int = -1, limit: int = MAX_LIST) -> Page[StepRow]:
        """One page of a run's steps in order: those after step ``after`` (its ``seq``)."""
        self.own_run(user, run_id)
        return Page.read(lambda n: self.pm.runs.steps(run_id, after, n), limit, lambda s: s.seq)

    def trace(self, user: UserRow, run_id: str, after: int = -1,
              limit: int = 200) -> tuple[RunRow, dict[str, Any], list[StepRow]]:
        """A run, its usage over every step, and its steps after ``after`` (at most ``limit``)."""
        run = self.own_run(user, run_id)
        return run, self.usage(run), self.pm.runs.steps(run_id, after, limit)

    def citation(self, user: UserRow, run_id: str, n: int, radius: int = CONTEXT_CHARS) -> CitedPlace:
        """Citation ``n`` (from 1, as the answer's markers ``[n]`` number them) of one of the user's runs, in its
        place: the text around it (the paragraphs holding the span, cut to ``radius`` characters either side), where
        that window starts in the cited text, and every citation of the run inside the window as spans of it.
        :class:`NotFound` for another user's run, a run without that citation, or a cited text that is gone."""
        run = self.own_run(user, run_id)
        cited = [c for c in ((run.result or {}).get("citations") or []) if isinstance(c, dict)]
        if not 1 <= n <= len(cited):
            raise NotFound(f"run {run_id!r} has no citation {n} (it has {len(cited)})")
        chosen = cited[n - 1]
        text = self._cited_text(user, run, chosen)
        start, end = _clamped(chosen, text)
        lo, hi = window(text, start, end, radius)
        spans: list[CitedSpan] = []
        for k, other in enumerate(cited, 1):
            if k != n and not _same_text(chosen, other):
                continue
            a, b = _clamped(other, text)
            if (a < hi and b > lo) or k == n:
                spans.append(CitedSpan(k, max(a, lo) - lo, min(b, hi) - lo))
        return CitedPlace(run.id, n, chosen, text[lo:hi], lo, len(text), tuple(spans))

    def _cited_text(self, user: UserRow, run: Any, cited: dict[str, Any]) -> str:
        """The text a citation's offsets point into: its document's (one of the user's), or for an agent's turn the
        archival passage's or recall message's own text."""
        if cited.get("unit") in ("passage", "message") and run.kind == "turn":
            from ...agent.evidence import message_text

            row = self.own_agent(user, int(run.target))
            agent = self.pm.agent(row.name, llm=False)
            index = int(cited.get("index") or 0)
            if cited["unit"] == "passage":
                found = agent.passages_by_id([index])
                if found:
                    return str(found[0].text)
            else:
                events = agent.events_by_seq([index])
                if events:
                    return message_text(events[0])
            raise NotFound(f"the cited {cited['unit']} {index} is no longer in the agent's memory")
        return str(self.pm.open_document(str(cited.get("document")), user_id=user.id).text)


def window(text: str, start: int, end: int, radius: int) -> tuple[int, int]:
    """The part of ``text`` shown around the span ``start``..``end``: the paragraphs (blank-line separated) that
    hold it, cut to at most ``radius`` characters either side of the span."""
    para = text.rfind("\n\n", 0, start)
    lo = max(0 if para < 0 else para + 2, start - radius)
    para = text.find("\n\n", end)
    hi = min(len(text) if para < 0 else para, end + radius)
    return min(lo, start), max(hi, end)


def _clamped(cited: dict[str, Any], text: str) -> tuple[int, int]:
    start = min(max(0, int(cited.get("start") or 0)), len(text))
    return start, min(max(start, int(cited.get("end") or 0)), len(text))


def _same_text(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two citations' offsets point into the same text (one document; one passage or message)."""
    if a.get("unit") in ("passage", "message") or b.get("unit") in ("passage", "message"):
        return (a.get("document"), a.get("unit"), a.get("index")) == (b.get("document"), b.get("unit"), b.get("index"))
    return bool(a.get("document") == b.get("document"))
