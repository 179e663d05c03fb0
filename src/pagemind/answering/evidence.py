"""From what a reader read to the sentences its answer rests on: the one path from evidence to citations.

Every reader declares its **evidence** on its :class:`~.base.Reading`: the units it read to answer (ReadAgent's
expanded pages and the pages whose gists it was shown, MemWalker's answering leaf, RAG's fragments in context,
the full text, the code reader's windows), each an :class:`Evidence`. The base :class:`~.base.Reader` turns it
into :class:`~pagemind.citations.Citation` values, in one of the ``cite`` option's modes:

* ``sentences`` (the default; no LLM call, no tokens): the answer (or the chosen option's text) is aligned to
  the sentences of the units read — content-word overlap weighted by rarity among those sentences, the question's
  words counting half, then, where the reader's ``cite_encoder`` is ``minilm`` (``auto``: readers that embed
  anyway, dense or hybrid RAG), re-ranked with the embedded MiniLM encoder (:func:`minilm_encoder`; a dozen short
  sentences, tens of milliseconds). A few best sentences are kept; the answer's ``details["cite_encoder"]`` says
  which ranking it got.
* ``quotes`` (opt-in, one added LLM call): the model is shown what it read, the question and its answer, and asked
  to quote the sentences it used (``citations.quote`` in ``prompts/citations.yaml``: pagemind's prompt, not a
  paper's). Each quote is looked up (:func:`pagemind.citations.locate`); one that is not in the document is
  dropped and recorded as a fallback, never shown as evidence.
* ``off``: no citations.

Offsets always come from :func:`pagemind.citations.cite` on the cited text, so ``quote == text[start:end]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..citations import Citation, cite, locate, overlaps
from ..text.words import VERDICTS, sentences, terms

KEEP = 3  # sentences cited per answer, at most
QUESTION_WEIGHT = 0.5  # a question word found in a sentence counts half an answer word
RELATIVE = 0.5  # a sentence is kept when its score is at least this share of the best one's
RERANK = 12  # lexical candidates the encoder re-ranks
MIN_QUOTE_WORDS = 3  # a shorter quote ("...", a name) would be found almost anywhere: it checks nothing


@dataclass(frozen=True)
class Evidence:
    """One unit a reader read to answer: what it is called, its text, and how the reader came to it."""

    unit: str  # page | leaf | fragment | text | window
    index: int | None  # the unit's number (None: the whole text)
    text: str  # the unit's text as the reader holds it (a gist's evidence is its page's text)
    found_by: str  # page | gist | leaf | fragment | text | window (pagemind.citations.FOUND_BY)
    weight: float = 1.0  # how much its sentences count (a page seen only through its gist counts less)
    within: Any = None  # the text it is cited in when not the answered document (a code file: ``.id``, ``.text``)
    head: str = ""  # what ``text`` starts with that is not the unit's own (a table's header carried above its rows)


@dataclass(frozen=True)
class SourceText:
    """A text citations point into when it is not a :class:`~pagemind.text.Document` (a source file)."""

    id: str
    text: str


# --- alignment --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    """A sentence of a unit read, and how well it supports the answer."""

    evidence: Evidence
    sentence: str
    score: float


def rank(evidence: Sequence[Evidence], answer: str, question: str = "",
         embedder: Any = None) -> list[Candidate]:
    """The sentences of ``evidence`` that share content words with ``answer``, best first.

    Lexical score: the rarity-weighted share (idf among the candidate sentences) of the answer's content words a
    sentence holds, the question's other words counting :data:`QUESTION_WEIGHT`, times the unit's weight. A
    sentence without any of the answer's words is not a candidate (when the answer has content words). With an
    ``embedder``, the best :data:`RERANK` are re-scored as the mean of that score and the cosine similarity of the
    sentence to the answer.
    """
    target = terms(answer) - VERDICTS  # "Yes, ..." is found by what follows it, or by the question alone
    asked = terms(question) - target
    if not target and not asked:
        return []
    pool: list[tuple[Evidence, str, set[str]]] = []
    seen: set[str] = set()
    for item in evidence:
        for sentence in sentences(item.text, lines=item.unit == "window"):
            if sentence in seen:
                continue
            seen.add(sentence)
            pool.append((item, sentence, terms(sentence)))
    if not pool:
        return []
    df: dict[str, int] = {}
    for _, _, words in pool:
        for w in words & (target | asked):
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(1 + len(pool) / n) for w, n in df.items()}
    total = sum(idf.get(w, 0.0) for w in target) + QUESTION_WEIGHT * sum(idf.get(w, 0.0) for w in asked)
    if total <= 0:
        return []
    scored = []
    for item, sentence, words in pool:
        if target and not words & target:
            continue
        hit = sum(idf[w] for w in words & target) + QUESTION_WEIGHT * sum(idf[w] for w in words & asked)
        if hit > 0:
            scored.append(Candidate(item, sentence, item.weight * hit / total))
    scored.sort(key=lambda c: -c.score)
    if embedder is not None and scored:
        scored = _rerank(scored, answer, embedder)
    return scored


def _rerank(scored: list[Candidate], answer: str, embedder: Any) -> list[Candidate]:
    head, tail = scored[:RERANK], scored[RERANK:]
    try:
        vectors = embedder.embed([answer] + [c.sentence for c in head])
    except Exception:  # the encoder is a refinement: lexical alignment stands without it
        return scored
    query = vectors[0].mean(axis=0)
    mixed = []
    for c, v in zip(head, vectors[1:]):
        similarity = max(0.0, float(v.mean(axis=0) @ query))
        mixed.append(Candidate(c.evidence, c.sentence, (c.score + c.evidence.weight * similarity) / 2))
    mixed.sort(key=lambda c: -c.score)
    return mixed + tail


@lru_cache(maxsize=1)
def minilm_encoder() -> Any:
    """The embedded MiniLM encoder (loaded once per process), or None where the ``retrieval`` extra is not installed
    or its weights fail their check: the alignment is then lexical, and the reader records why. Which readers use it
    is their ``cite_encoder`` option, resolved when the reader is made (a plain full-text answer loads nothing
    heavy)."""
    try:
        from ..retrieval.embed import load_embedder

        return load_embedder("minilm", threads=1)
    except Exception:  # not installed, or its weights fail their check: align lexically
        return None


def supporting(document: Any, evidence: Sequence[Evidence], answer: str, question: str = "",
               keep: int = KEEP, embedder: Any = None) -> list[Citation]:
    """Citations of the (at most ``keep``) sentences of ``evidence`` that best support ``answer``, best first,
    each located in its text (sentences that cannot be located are passed over)."""
    out: list[Citation] = []
    starts: dict[int, int] = {}
    ranked = rank(evidence, answer, question, embedder)
    best = ranked[0].score if ranked else 0.0
    for c in ranked:
        if len(out) >= keep or c.score < RELATIVE * best:
            break
        source = c.evidence.within if c.evidence.within is not None else document
        at = starts.setdefault(id(c.evidence), _start_of(source.text, c.evidence.text))
        found = _cite_in(source, c.evidence, c.sentence, at, round(c.score, 4))
        if found is not None and not any(found.document == o.document and overlaps(found.span, o.span) for o in out):
            out.append(found)
    return out


def supporting_each(document: Any, evidence: Sequence[Evidence], claims: Sequence[str], question: str = "",
                    embedder: Any = None) -> list[Citation | None]:
    """The citation of the sentence of ``evidence`` that best supports each of ``claims`` (None where none does), in
    their order: claims that stand together, as a computed answer's figures do, each cited at its own row — cited as
    one answer, three sentences at most, a working of four figures had left its inventory row uncited. Of the best
    :data:`KEEP` sentences, the first that holds the claim's figures (a statement written as one line of text is cut
    into pieces: its line's name may end one and the figure start the next), else the best."""
    from .support import numbers

    out: list[Citation | None] = []
    for claim in claims:
        found = supporting(document, evidence, claim, question, keep=KEEP, embedder=embedder)
        figures = numbers(claim)
        out.append(next((c for c in found if figures <= numbers(c.quote)), found[0] if found else None))
    return out


def distinct(citations: Sequence[Citation | None]) -> list[Citation]:
    """``citations`` without the missing ones and each span once, in order."""
    out: list[Citation] = []
    for found in citations:
        if found is not None and not any(found.document == o.document and found.span == o.span for o in out):
            out.append(found)
    return out


def passage(source: Any, evidence: Evidence, score: float | None = None) -> Citation | None:
    """A citation of a whole unit (a retriever's passage) at its place in ``source``, or None if it is not there;
    its own text, without the head carried above it."""
    own = evidence.text[len(evidence.head):]
    return _cite_in(source, evidence, own, _start_of(source.text, own), score)


def _cite_in(source: Any, evidence: Evidence, snippet: str, at: int, score: float | None) -> Citation | None:
    """``snippet`` of ``evidence`` cited in ``source``: looked for from where the unit starts (``at``), then
    anywhere (a unit whose first sentence was not found)."""
    return (cite(source, evidence.unit, evidence.index, snippet, evidence.found_by, start=at, score=score)
            or cite(source, evidence.unit, evidence.index, snippet, evidence.found_by, score=score))


def _start_of(text: str, unit: str) -> int:
    """Where ``unit`` starts in ``text`` (0 when its first sentence cannot be located)."""
    first = next(iter(sentences(unit)), "")
    span = locate(text, first[:200]) if first else None
    return span[0] if span else 0


# --- quoted evidence ---------------------------------------------------------------------------------------
QUOTES_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"quotes": {"type": "array", "items": {"type": "string"}, "maxItems": KEEP}},
    "required": ["quotes"], "additionalProperties": False,
}
QUOTES_GRAMMAR = (
    'root ::= "{\\"quotes\\": [" (string (", " string){0,2})? "]}"\n'
    'string ::= "\\"" ([^"\\\\\\n] | "\\\\" ["\\\\/bfnrt])* "\\""'
)


def units_text(evidence: Sequence[Evidence]) -> str:
    """The units read as a later request shows them again: each under its name ("<Fragment 7>")."""
    return "\n\n".join(f"<{e.unit.capitalize()}{'' if e.index is None else ' ' + str(e.index)}>\n{e.text}"
                       for e in evidence)


def read_in_full(evidence: Sequence[Evidence]) -> list[Evidence]:
    """The units read in full (ReadAgent's expanded pages, not the pages it saw only as gists), else all of them."""
    return [e for e in evidence if e.weight >= 1.0] or list(evidence)


def fitting(evidence: Sequence[Evidence], llm: Any, build: Callable[[list[Evidence]], Any]
            ) -> tuple[list[Evidence], Any] | None:
    """The units a request after the answer shows, and the request ``build`` makes of them: those
    :func:`read_in_full`, as many as fit the model's window beside the request (a prefix of them: the last ones are
    left out first); None when not even one fits."""
    shown = read_in_full(evidence)
    request = build(shown)
    while len(shown) > 1 and not llm.fits(request):
        shown.pop()
        request = build(shown)
    return (shown, request) if llm.fits(request) else None


def quote_request(evidence: Sequence[Evidence], question: Any, answer: str, constrained: bool,
                  max_tokens: int = 400) -> Any:
    """The request asking the model to quote the sentences of what it read that its answer rests on."""
    from ..llm.base import Constraint, LLMRequest, Message
    from ..prompts import get_prompt

    text = units_text(evidence)
    options = question.options_block() if question.is_choice else ""
    prompt = get_prompt("citations", "quote").render(text=text, question=question.text, options=options,
                                                     answer=answer, most=KEEP)
    constraint = Constraint("quotes", gbnf=QUOTES_GRAMMAR, json_schema=QUOTES_SCHEMA) if constrained else None
    return LLMRequest(messages=(Message("user", prompt),), role="cite", max_tokens=max_tokens, constraint=constraint)


_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*[\"“](.+)[\"”]\s*$")


def parse_quotes(reply: str) -> list[str] | str:
    """The quotes of a reply: ``{"quotes": [...]}`` (possibly fenced), else lines that are each a quoted
    sentence; a problem (str) when there are neither."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", reply.strip())
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            return "the reply is not valid JSON"
        quotes = data.get("quotes") if isinstance(data, dict) else None
        if not isinstance(quotes, list) or not all(isinstance(q, str) for q in quotes):
            return 'the JSON has no "quotes" list of strings'
        return [q.strip() for q in quotes if q.strip()][:KEEP]
    lines = [m.group(1).strip() for m in map(_LIST_LINE.match, body.splitlines()) if m]
    if lines:
        return lines[:KEEP]
    return 'no quotes found: reply with {"quotes": ["...", "..."]}'


def placed(document: Any, evidence: Sequence[Evidence], quote: str) -> Citation | None:
    """The citation of a model's ``quote``: in the unit read that holds it, else anywhere in the document; None
    when it is in neither (an invented quote)."""
    for item in evidence:
        if locate(item.text, quote) is None:
            continue
        source = item.within if item.within is not None else document
        found = (cite(source, item.unit, item.index, quote, "quote", start=_start_of(source.text, item.text))
                 or cite(source, item.unit, item.index, quote, "quote"))
        if found is not None:
            return found
    return None if document is None else cite(document, "text", None, quote, "quote")


__all__ = [
    "Evidence",
    "SourceText",
    "fitting",
    "minilm_encoder",
    "parse_quotes",
    "placed",
    "quote_request",
    "rank",
    "read_in_full",
    "supporting",
    "units_text",
]
