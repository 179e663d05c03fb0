"""What an agent's turn cites: the archival passages and recall messages its searches returned, aligned to its reply.

An agent's memory is not one document: each archival passage and each recalled message is cited as its own text.
A citation's ``document`` is the passage's source (a loaded document's name, ``api``...) or ``archival``, and
``recall`` for a message; ``unit`` is ``passage`` (``index`` = the passage id) or ``message`` (``index`` = the
message's seq in the agent's history); ``start``/``end`` are offsets into that passage's or message's text, so
``quote == text[start:end]``.

The reply is aligned lexically (shared content words, per sentence of the evidence, at least two; no LLM call): a
passage the searches returned but the reply does not use is not cited. Lexical alignment misses a paraphrase that
shares no words with its source, and may cite a sentence that shares words by chance. A fact saved to core memory
cites the user message it came from (:func:`source_of`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..citations import Citation, locate
from ..text.when import Day, dates_of, same_date, written_dates
from ..text.words import keywords, sentences
from .memory import Event, Passage

MAX_CITATIONS = 5  # a few per reply, best first
MIN_SHARED = 2  # content words a cited sentence shares with the reply (one shared word is too often chance)
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")  # a question's names (and its first word: no content word)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")  # a capitalised word not opening a sentence


def passage_citation(p: Passage) -> Citation:
    """A whole archival passage as evidence (its own text)."""
    return Citation(p.source or "archival", "passage", p.id, 0, len(p.text), p.text, "passage",
                    document_name=p.source or None)


def message_text(e: Event) -> str:
    """The text of a recall message a citation points into (what recall search shows of it)."""
    return e.search_text()


def message_citation(e: Event) -> Citation:
    """A whole recall message as evidence."""
    text = message_text(e)
    where = e.payload.get("where") if isinstance(e.payload, dict) else None
    return Citation("recall", "message", e.seq, 0, len(text), text, "message",
                    section=where if isinstance(where, str) and where else None)


def _sentences(c: Citation) -> Iterable[tuple[int, int]]:
    """(start, end) of each sentence of the cited text, as offsets into it."""
    at = c.start
    for sentence in sentences(c.quote):
        span = locate(c.quote, sentence, at - c.start)
        if span is None:
            continue
        yield c.start + span[0], c.start + span[1]
        at = c.start + span[1]


def _words(text: str) -> set[str]:
    """The content words of ``text``, a number however written in one form ("three" and "3": ``3``), so "3" for
    "How many bikes do I own now?" cites "so now I have three bikes"."""
    from ..answering.support import numbers

    return {w for w in keywords(text) if w[:1].isdigit() or not numbers(w)} | numbers(text)


@dataclass(frozen=True)
class _Reply:
    """What a reply is aligned by: its content words, its names (capitalised words not opening a sentence: a place
    or a person), its own words (those the question did not say), the dates it writes, and the question's words but
    its names (what a dated sentence must be about)."""

    words: frozenset[str]
    names: frozenset[str] = frozenset()
    own: frozenset[str] = frozenset()
    dates: frozenset[Day] = frozenset()
    topic: frozenset[str] = frozenset()

    @classmethod
    def of(cls, reply: str, question: str = "") -> _Reply:
        words = frozenset(_words(reply))
        asked = _words(question)
        named = {w.lower() for w in _CAPITALISED.findall(question)}
        return cls(words, frozenset(w.lower() for w in _NAME.findall(reply)) & words, words - asked,
                   written_dates(reply) if question else frozenset(), frozenset(asked - named))


def _best(c: Citation, reply: _Reply, said: Event | None = None) -> Citation | None:
    """The sentence of ``c`` sharing most content words with the reply, at least :data:`MIN_SHARED` of them (or all
    when it has fewer), one of them the reply's own (where it has any: "John: I've done weight training" shares only
    "John" and "done" with "John has done kickboxing." for "What martial arts has John done?"); a shared name counts
    twice, so "You live in Leeds now." cites "I moved to Leeds last month"; None when no sentence shares that many.
    ``said``: the message ``c`` quotes — its speaker's name (an imported conversation's "John") is a word of each of
    its sentences (counted once; one of the reply's own only in a sentence sharing a word with the question), and a
    sentence that stands for a date of the reply (:func:`same_date`: its own relative words', or any sentence's for
    the day it was said) and shares a word with the question is used."""
    best: tuple[int, int, int] | None = None
    needed = min(MIN_SHARED, len(reply.words)) or 1
    speaker = str(said.payload.get("speaker") or "").lower() if said is not None else ""
    when = said.time if said is not None and reply.dates and reply.topic else ""
    on_day = bool(when) and _dated(reply.dates, dates_of("", when))
    for start, end in _sentences(c):
        text = c.quote[start - c.start:end - c.start]
        sentence = _words(text)
        about = bool(reply.topic & sentence)  # of what the question asks
        # the speaker's name, once (not as a name the reply gives, twice), and a word of the reply's own only in a
        # sentence of what was asked ("Melanie" for "Who painted a lake sunrise?": not "My kids love the beach.")
        told = {speaker} if speaker and speaker not in sentence else set()
        shared = reply.words & (sentence | told)
        hits = len(shared) + len(shared & reply.names - told)
        if when and about and (on_day or _dated(reply.dates, dates_of(text, when))):
            hits += needed + 1  # the sentence the date came from: above one sharing a word or two by chance
        elif reply.own and not reply.own & (sentence | (told if about else set())):
            continue  # only the words the reply restates from the question
        if hits >= needed and (best is None or hits > best[0]):
            best = (hits, start, end)
    if best is None:
        return None
    hits, start, end = best
    return replace(c, start=start, end=end, quote=c.quote[start - c.start:end - c.start],
                   score=round(hits / max(1, len(reply.words)), 3))


def _dated(asked: frozenset[Day], told: frozenset[Day]) -> bool:
    """Whether a date of the reply is one a sentence stands for."""
    return any(same_date(a, t) for a in asked for t in told)


def support(evidence: Sequence[Citation], reply: str, limit: int = MAX_CITATIONS,
            messages: Mapping[int, Event] | None = None, question: str = "") -> list[Citation]:
    """The evidence the reply used, best first: per passage or message, its sentence sharing most content words with
    the reply (none: not cited; :func:`_best`). ``question``: what the reply answers — the reply's own words are
    those it did not restate from it, and a date the reply gives (worked out from a message, it shares no word with
    it: "When did Melanie run a charity race?" — "20 May 2023", from "I ran a charity race last Saturday" said 25
    May 2023; "2018" from "I started surfing five years ago") is read against ``messages``, the cited messages by
    seq (when each was said, and by whom)."""
    read = _Reply.of(reply, question)
    if not read.words and not read.dates:
        return []
    seen: set[tuple[str, int | None]] = set()
    found = []
    for c in evidence:
        if (c.unit, c.index) in seen:
            continue
        seen.add((c.unit, c.index))
        best = _best(c, read, (messages or {}).get(c.index or 0) if c.unit == "message" else None)
        if best is not None:
            found.append(best)
    return sorted(found, key=lambda c: -(c.score or 0))[:limit]


def source_of(content: str, messages: Sequence[Event]) -> Citation | None:
    """The user message a fact saved to core memory came from: the one sharing most content words with it (the
    latest on a tie, and the latest when none shares any), cited at its best sentence."""
    users = [e for e in messages if e.kind == "user_message"]
    if not users:
        return None
    wanted = keywords(content)
    ranked = max(reversed(users), key=lambda e: len(wanted & keywords(message_text(e))))
    whole = message_citation(ranked)
    span = locate(whole.quote, content)
    if span is not None:
        return Citation(whole.document, whole.unit, whole.index, span[0], span[1], whole.quote[span[0]:span[1]],
                        whole.found_by, score=1.0)
    best = _best(whole, _Reply(frozenset(wanted))) if wanted else None
    return best or whole


__all__ = ["MAX_CITATIONS", "message_citation", "message_text", "passage_citation", "source_of", "support"]
