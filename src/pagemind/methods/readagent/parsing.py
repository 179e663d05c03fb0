"""Tolerant parsers for ReadAgent's LLM decisions. Each returns a typed result; none guesses silently.

They are supersets of the official notebook parsers: the pause point accepts every reply format the
published prompts ask for (``Break point: <n>``, ``Breakpoint: <n>``, ``Label: <n>``, ``The break
point is: <n>``), range-checks it and reports why it failed; the look-up parser de-duplicates,
range-checks and caps; the sequential parser understands ``Page N`` and ``STOP``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

_KEYWORD = re.compile(r"(break\s*point(?:\s+label)?(?:\s+is)?|label|pause\s*point)\s*[:：]?\s*", re.IGNORECASE)
_TAG = re.compile(r"<\s*(\d+)\s*>")


@dataclass(frozen=True)
class PausePoint:
    label: int | None  # the accepted label, or None when the reply gave no usable one
    problem: str = ""  # why not, when label is None


def parse_pause_point(reply: str, first: int, last: int) -> PausePoint:
    """The label a pagination reply chooses, valid when ``first < label <= last``."""
    text = reply.strip()
    if not text:
        return PausePoint(None, "empty reply")
    candidates: list[int] = []
    for m in _KEYWORD.finditer(text):
        rest = text[m.end() : m.end() + 40]
        tag = re.match(r"\**\s*<\s*(\d+)\s*>", rest) or re.match(r"\**\s*(\d+)\b", rest)
        if tag:
            candidates.append(int(tag.group(1)))
            break
    if not candidates:
        tags = list(dict.fromkeys(int(t) for t in _TAG.findall(text)))
        if len(tags) == 1:
            candidates = tags
        elif len(tags) > 1:
            return PausePoint(None, f"several labels and no 'Break point:' ({tags[:5]})")
    if not candidates:
        return PausePoint(None, "no label in reply")
    label = candidates[0]
    if not first < label <= last:
        return PausePoint(None, f"label <{label}> outside <{first + 1}>..<{last}>")
    return PausePoint(label)


@dataclass(frozen=True)
class LookupRequest:
    pages: tuple[int, ...]  # distinct, in range, capped, in the order the model gave
    problems: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.pages


def _valid(pages: int | Collection[int], noun: str = "page") -> tuple[Collection[int], str]:
    """The page numbers a reply may name (``n`` pages: 0..n-1, or the pages shown) and how to say so."""
    if isinstance(pages, int):
        return range(pages), f"0..{pages - 1}"
    shown = sorted(pages)
    return frozenset(shown), f"the {noun}s shown" + (f" ({shown[0]}..{shown[-1]})" if shown else "")


def parse_lookup(reply: str, n_pages: int | Collection[int], max_pages: int, noun: str = "page") -> LookupRequest:
    """Pages a ReadAgent-P reply asks for: the first ``[...]`` list, else ``Page N`` mentions. ``noun="part"``
    reads the group choice of ``overflow=hierarchical`` (``Part [N, ...]``) the same way."""
    valid, span = _valid(n_pages, noun)
    problems: list[str] = []
    m = re.search(r"\[([^\[\]]*)\]", reply)
    if m:
        raw = re.findall(r"-?\d+", m.group(1))
    else:
        raw = re.findall(rf"\b{noun}s?\s*#?\s*(-?\d+(?:\s*(?:,|and|&)\s*-?\d+)*)", reply, flags=re.IGNORECASE)
        raw = [n for group in raw for n in re.findall(r"-?\d+", group)]
        if raw:
            problems.append(f"no [..] list; used '{noun.capitalize()} N' mentions")
    pages: list[int] = []
    for token in raw:
        n = int(token)
        if n not in valid:
            problems.append(f"{noun} {n} out of range {span}")
        elif n in pages:
            problems.append(f"{noun} {n} repeated")
        else:
            pages.append(n)
    if len(pages) > max_pages:
        problems.append(f"{len(pages)} {noun}s asked, kept the first {max_pages}")
        pages = pages[:max_pages]
    if not raw:
        problems.append(f"no {noun} numbers in reply")
    return LookupRequest(tuple(pages), tuple(problems))


@dataclass(frozen=True)
class SequentialStep:
    page: int | None = None
    stop: bool = False
    problem: str = ""


def parse_sequential(reply: str, n_pages: int | Collection[int],
                     already_read: set[int] | frozenset[int], noun: str = "page") -> SequentialStep:
    """One ReadAgent-S decision: ``Page N`` (new, in range) or ``STOP`` (``noun="part"``: ``Part N``)."""
    text = reply.strip()
    m = re.search(rf"\b{noun}\s*#?\s*\[?\s*(\d+)", text, flags=re.IGNORECASE)
    if m is None and re.fullmatch(r"\[?\s*\d+\s*\]?\.?", text):
        m = re.search(r"(\d+)", text)
    if m is None:
        if re.search(r"\bstop\b", text, flags=re.IGNORECASE):
            return SequentialStep(stop=True)
        return SequentialStep(problem=f"neither '{noun.capitalize()} N' nor STOP")
    page = int(m.group(1))
    valid, span = _valid(n_pages, noun)
    if page not in valid:
        return SequentialStep(problem=f"{noun} {page} out of range {span}")
    if page in already_read:
        return SequentialStep(problem=f"{noun} {page} was already read")
    return SequentialStep(page=page)


def escape_labels(text: str) -> str:
    """Show ``<12>``-like text inside a document as ``‹12›`` so it cannot pass for a pause label."""
    return _TAG.sub(lambda m: f"‹{m.group(1)}›", text)
