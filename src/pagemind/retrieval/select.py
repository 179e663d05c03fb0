"""Fitting retrieved fragments into a token budget and the model's context window."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .fragments import Fragment

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Selection:
    """The fragments placed in context, in the order they are shown, and the text they make."""

    fragments: tuple[Fragment, ...]
    text: str
    skipped: tuple[int, ...] = ()  # ranked fragments (within top_k) left out because they did not fit
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def indices(self) -> list[int]:
        return [f.index for f in self.fragments]


def join(fragments: Sequence[Fragment], order: Literal["score", "position"]) -> str:
    """The context text: fragments in rank order, or in document order (source, then position)."""
    shown = list(fragments) if order == "score" else sorted(fragments, key=lambda f: (f.source, f.position, f.index))
    return SEPARATOR.join(f.shown for f in shown)


def fit(ranked: Sequence[Fragment], fits: Callable[[str], bool], order: Literal["score", "position"] = "score",
        top_k: int | None = None, max_skips: int = 8,
        render: Callable[[list[Fragment]], str] | None = None) -> Selection:
    """Add fragments in rank order while the joined text still ``fits``; a fragment that does not fit is
    skipped and the next ones are tried (a smaller one may still fit), up to ``top_k`` fragments taken and
    until ``max_skips`` fragments in a row did not fit.

    ``fits`` judges the whole context text exactly as it will be shown (``render`` of the chosen fragments
    in rank order; by default :func:`join`), so separators and the order are counted: it checks the token
    budget and the model's window.
    """
    render = render or (lambda frs: join(frs, order))
    chosen: list[Fragment] = []
    skipped: list[int] = []
    in_a_row = 0
    for frag in ranked:
        if (top_k is not None and len(chosen) >= top_k) or in_a_row >= max_skips:
            break
        trial = chosen + [frag]
        if fits(render(trial)):
            chosen, in_a_row = trial, 0
        else:
            skipped.append(frag.index)
            in_a_row += 1
    shown = chosen if order == "score" else sorted(chosen, key=lambda f: (f.source, f.position, f.index))
    return Selection(tuple(shown), render(chosen), tuple(skipped))
