"""Evidence: the labelled spans of a benchmark, and how well an answer's citations hit them.

Labels are kept on each :class:`~.datasets.Example` as :class:`Span` values: character offsets into
``example.document`` (the text every reader method reads), with the label's own name and the transcript turns
it covers.

* QMSum: each ``relevant_text_span`` ``[start_turn, end_turn]`` (inclusive turn indices) becomes one span, from
  the first character of turn ``start_turn``'s line to the end of turn ``end_turn``'s line in the transcript the
  loader builds (``Speaker: content`` lines joined by newlines). General queries ("Summarize the whole
  meeting") have no labels.
* LoCoMo: each ``evidence`` dialogue id ``D<session>:<turn>`` becomes the span of that turn's transcript line
  (``[date] Speaker: text``); ids the conversation does not have (the data has a few typos, e.g. ``D:11:26``)
  are counted in ``meta["evidence_unresolved"]``, never guessed.

A citation is placed in the example's document (:func:`place`): at its own offsets when
``document[start:end] == quote``, else where its quote is found (:func:`pagemind.citations.locate`: exact, then
tolerant of whitespace, punctuation and case) — so the agent's recall messages (``Speaker: text``) and archival
passages land on the transcript turns they hold. A quote found nowhere is placed nowhere (it hits no label).

Metrics of one answer (:func:`evidence_scores`), on half-open character spans ``[start, end)`` where two spans
overlap when each starts before the other ends (touching spans do not overlap):

* ``recall`` = labelled spans overlapped by at least one citation / labelled spans (0 with no citations);
* ``precision`` = citations overlapping at least one labelled span / citations (None with no citations: the
  report averages it over the answers that cite);
* ``labels``, ``citations``, ``hit`` (indices of the labels hit).

QuALITY has no evidence labels; its documented proxy (:func:`support_proxy`) is the share of the chosen
option's content words (lower-cased, without stopwords: :func:`pagemind.text.words.content_words`) that occur
in the cited quotes together (0 with no citations; None when no option was chosen or it has no content word).
It says the citations talk about what the answer claims, not that they prove it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..citations import Citation, locate, overlaps
from ..errors import DatasetError
from ..text.words import content_words, keywords


@dataclass(frozen=True)
class Span:
    """One labelled piece of evidence: ``document[start:end]``, named as the data names it."""

    label: str  # "turns 12-30" (QMSum), "D1:3" (LoCoMo)
    start: int
    end: int
    turns: tuple[int, int] = (0, 0)  # first and last transcript turn (0-based, inclusive)

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "start": self.start, "end": self.end, "turns": list(self.turns)}


def line_offsets(lines: Sequence[str], sep: str = "\n") -> list[tuple[int, int]]:
    """``(start, end)`` of each line in ``sep.join(lines)``."""
    out, at = [], 0
    for line in lines:
        out.append((at, at + len(line)))
        at += len(line) + len(sep)
    return out


# --- QMSum -----------------------------------------------------------------------------------------
def qmsum_spans(ranges: Any, offsets: Sequence[tuple[int, int]], where: str) -> tuple[Span, ...]:
    """QMSum ``relevant_text_span`` (``[["12", "30"], ...]``, inclusive turn indices) as character spans of the
    transcript whose turn ``i`` lies at ``offsets[i]``."""
    if ranges is None:
        return ()
    if not isinstance(ranges, list):
        raise DatasetError(f"{where}: relevant_text_span should be a list of [start, end] turn pairs")
    spans = []
    for pair in ranges:
        try:
            first, last = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise DatasetError(f"{where}: relevant_text_span entry {pair!r} is not a [start, end] turn pair") from None
        last = min(last, len(offsets) - 1)  # upstream ends a few ranges one past the last turn
        if first < 0 or first > last:
            raise DatasetError(f"{where}: relevant_text_span {pair!r} is outside the {len(offsets)} turns")
        spans.append(Span(f"turns {first}-{last}", offsets[first][0], offsets[last][1], (first, last)))
    return tuple(spans)


# --- LoCoMo ----------------------------------------------------------------------------------------
DIA_ID = re.compile(r"D(\d+):(\d+)")


def locomo_spans(evidence: Iterable[Any], dia_ids: Mapping[str, int],
                 offsets: Sequence[tuple[int, int]]) -> tuple[tuple[Span, ...], list[str]]:
    """(spans of the evidence dialogue ids, the ids not found). ``dia_ids`` maps ``D1:3`` to the turn's index;
    an entry holding several ids (``"D8:6; D9:17"``) gives each."""
    spans: list[Span] = []
    missing: list[str] = []
    for entry in evidence:
        ids = DIA_ID.findall(str(entry))
        if not ids:
            missing.append(str(entry))
        for session, turn in ids:
            key = f"D{int(session)}:{int(turn)}"
            index = dia_ids.get(key)
            if index is None:
                missing.append(key)
            elif all(s.label != key for s in spans):
                spans.append(Span(key, offsets[index][0], offsets[index][1], (index, index)))
    return tuple(spans), missing


# --- placing citations and scoring -----------------------------------------------------------------
def place(document: str, citation: Citation | Mapping[str, Any]) -> tuple[int, int] | None:
    """Where ``citation`` lies in ``document``: its own offsets when they hold its quote, else where its quote
    is found; None when it is not there."""
    c = citation.as_dict() if isinstance(citation, Citation) else citation
    quote, start, end = str(c.get("quote") or ""), c.get("start"), c.get("end")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(document) \
            and document[start:end] == quote:
        return start, end
    return locate(document, quote)


def evidence_scores(document: str, labels: Sequence[Span], citations: Sequence[Citation | Mapping[str, Any]],
                    document_id: str | None = None) -> dict[str, Any]:
    """Recall and precision of ``citations`` against ``labels`` (see the module docstring). With ``document_id``
    (a question asked of a library), a citation of another document lies on no label."""
    placed = [None if document_id and _cited(c) not in (None, document_id) else place(document, c) for c in citations]
    hit = [i for i, s in enumerate(labels) if any(p and overlaps(p, (s.start, s.end)) for p in placed)]
    on_label = sum(1 for p in placed if p and any(overlaps(p, (s.start, s.end)) for s in labels))
    return {"labels": len(labels), "citations": len(citations), "placed": sum(p is not None for p in placed),
            "hit": hit, "recall": len(hit) / len(labels) if labels else None,
            "precision": on_label / len(citations) if citations else None}


def _cited(citation: Citation | Mapping[str, Any]) -> str | None:
    """The id of the document a citation names (None when it names none)."""
    value = citation.document if isinstance(citation, Citation) else citation.get("document")
    return str(value) if value else None


def support_proxy(option: str | None, citations: Sequence[Citation | Mapping[str, Any]]) -> float | None:
    """The share of ``option``'s content words found in the cited quotes (QuALITY's evidence proxy)."""
    if option is None:
        return None
    words = list(dict.fromkeys(content_words(option)))
    if not words:
        return None
    if not citations:
        return 0.0
    cited = keywords(" ".join(str(c.quote if isinstance(c, Citation) else c.get("quote", "")) for c in citations))
    return sum(w in cited for w in words) / len(words)


__all__ = ["Span", "evidence_scores", "line_offsets", "locomo_spans", "overlaps", "place", "qmsum_spans",
           "support_proxy"]
