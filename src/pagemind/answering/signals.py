"""What an answer's trust is read from, as numbers (issue 51): the support check's scores, the model's own
probability (and, for a choice, how far the text moved it, ``lift``, how far it led the runner-up, ``margin``, and
its share with the options listed in reverse order, ``reordered``; for a free-form answer, how far sampled replies
agree with it, ``agreement``),
the verifier's, the citations' — recorded beside every evaluated answer so a confidence can be fitted on labelled runs
rather than set by hand, and read back by the fitted model (:mod:`pagemind.answering.calibration`).

Every signal is a float; one that an answer does not have (no log-probabilities from the backend, no verifier, no
MiniLM) is 0 with its ``has_*`` flag 0, so a fitted model learns what its absence means instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from ..text.words import VERDICT, polar

if TYPE_CHECKING:
    from .question import Answer

Kind = Literal["choice", "numeric", "free"]
KINDS: tuple[Kind, ...] = ("choice", "numeric", "free")
_FIGURE = re.compile(r"\d")
# a question asking for a figure: how much/many, a ratio, a rate, an amount, a share, a year
_ASKS_FIGURE = re.compile(r"\bhow\s+(?:much|many|long|old)\b|\b(?:ratio|rate|margin|percent(?:age)?|amount|total|"
                          r"number|value|revenue|income|cost|price|EPS|capex|cash\s+flow|when|what\s+year)\b",
                          re.IGNORECASE)

NAMES: tuple[str, ...] = (
    "support_confidence", "supported", "partial", "claim_min", "claim_mean", "words_min", "similarity_min",
    "has_similarity", "missing", "unnamed", "unfounded", "relevance", "declined", "rival", "probability",
    "min_logprob", "has_probability", "verifier", "has_verifier", "citations", "cited_score", "later",
    "has_later", "lift", "has_prior", "margin", "has_margin", "reordered", "has_reordered", "yes_no", "agreement",
    "has_agreement", "unwritten", "has_unwritten", "asked", "has_asked")
# a signal an answer may not have, and the flag that says it has it (0 with the flag 0 when absent)
FLAGS = {"probability": "has_probability", "min_logprob": "has_probability", "similarity_min": "has_similarity",
         "verifier": "has_verifier", "later": "has_later", "lift": "has_prior", "margin": "has_margin",
         "reordered": "has_reordered", "agreement": "has_agreement", "unwritten": "has_unwritten",
         "asked": "has_asked"}


def tied(flag: str) -> frozenset[str]:
    """``flag`` and the signals it says an answer has (``has_probability``: ``probability`` and ``min_logprob``): what
    goes in or out of a fit together."""
    return frozenset({flag, *(name for name, f in FLAGS.items() if f == flag)})


# which way each signal may move a fitted confidence, all else equal: +1 never down as it grows (more support, a
# surer model), -1 never up (a missing figure, an unnamed anchor, a better-supported rival option, the document
# speaking of what was asked again after the passages cited, a name asked of that it never writes; more of what was
# asked spoken of by the passages cited never down), 0 either way
# (flags, counts): an answer is never ranked higher for being less supported
DIRECTION = {"supported": 1, "partial": 1, "claim_min": 1, "claim_mean": 1, "words_min": 1, "similarity_min": 1,
             "has_similarity": 0, "missing": -1, "unnamed": -1, "unfounded": -1, "relevance": 1, "declined": -1,
             "rival": -1, "probability": 1, "min_logprob": 1, "has_probability": 0, "verifier": 1,
             "has_verifier": 0, "citations": 0, "cited_score": 1, "support_confidence": 1, "later": -1,
             "has_later": 0, "lift": 1, "has_prior": 0, "margin": 1, "has_margin": 0, "reordered": 1,
             "has_reordered": 0, "yes_no": 0, "agreement": 1, "has_agreement": 0, "unwritten": -1,
             "has_unwritten": 0, "asked": 1, "has_asked": 0}


def seen(signals: Mapping[str, float], name: str) -> float:
    """Signal ``name`` as a fitted model reads it: ``partial`` as "at least partly supported" (1 for a supported
    answer too), so that with both weights kept non-negative a supported answer never ranks below a partial one
    (recorded as they are, one label each, they could: the free model weighed "partial" alone)."""
    if name == "partial":
        return max(float(signals.get("partial", 0.0)), float(signals.get("supported", 0.0)))
    return float(signals.get(name, 0.0))


def is_yes_no(question: str, said: str) -> bool:
    """Whether ``said`` answers the yes/no question ``question`` with its yes or no ("Yes, Pfizer grew its PPNE"): a
    support check reads such an answer's words as the question restated, not as evidence, so its scores say less of
    it than of an answer with content of its own (FinanceBench's 20 such answers: 16 right, 13 of them at support
    confidences of 0.12-0.55)."""
    return polar(question) and VERDICT.match(said) is not None


def _said(answer: Answer) -> str:
    """What the model answered: its draft where the answer was withheld (the model's words, not ours)."""
    return (answer.draft if answer.abstained and answer.draft is not None else answer.text) or ""


def _yes_no(answer: Answer) -> bool:
    """:func:`is_yes_no` of what the model answered; never of a choice among options."""
    return not answer.question.is_choice and is_yes_no(answer.question.text, _said(answer))


def kind_of(answer: Answer) -> Kind:
    """Which fitted model reads the answer: multiple choice, a figure asked and given, or free form — a yes or no
    to a yes/no question is free form whatever figures it restates ("Yes, there was a change in the number of
    stores between Q2 of FY2024 and FY2023")."""
    if answer.question.is_choice:
        return "choice"
    if _yes_no(answer):
        return "free"
    if _ASKS_FIGURE.search(answer.question.text) and _FIGURE.search(_said(answer)):
        return "numeric"
    return "free"


def signals(answer: Answer) -> dict[str, float]:
    """The answer's signals by :data:`NAMES` (empty where its support was not judged)."""
    support = answer.support
    if support is None:
        return {}
    claims = support.claims
    scores = [c.score for c in claims] or [0.0]
    words = [c.words for c in claims] or [0.0]
    similar = [c.similarity for c in claims if c.similarity is not None]
    probability = answer.probability
    verdict = support.verdict
    held = verdict is not None and verdict.label is not None and verdict.confidence is not None
    verifier = 0.0
    if held and verdict is not None and verdict.confidence is not None:  # the probability that it is supported
        verifier = verdict.confidence if verdict.label == "supported" else 1.0 - verdict.confidence
    cited = [c.score for c in answer.citations if c.score is not None]
    out = {
        "support_confidence": support.confidence, "supported": float(support.label == "supported"),
        "partial": float(support.label == "partial"), "claim_min": min(scores),
        "claim_mean": sum(scores) / len(scores), "words_min": min(words),
        "similarity_min": min(similar) if similar else 0.0, "has_similarity": float(bool(similar)),
        "missing": float(sum(len(c.missing) for c in claims)), "unnamed": float(any(c.unnamed for c in claims)),
        "unfounded": float(len(support.unfounded)), "relevance": support.relevance,
        "declined": float(support.declined), "rival": support.rival[1] if support.rival else 0.0,
        "probability": probability.value or 0.0, "min_logprob": probability.min_logprob or 0.0,
        "has_probability": float(probability.value is not None), "verifier": verifier, "has_verifier": float(held),
        "citations": float(len(answer.citations)), "cited_score": sum(cited) / len(cited) if cited else 0.0,
        "later": float(bool(support.later)), "has_later": float(support.later is not None),
        "lift": probability.lift or 0.0, "has_prior": float(probability.lift is not None),
        "margin": probability.margin or 0.0, "has_margin": float(probability.margin is not None),
        "reordered": probability.reordered or 0.0, "has_reordered": float(probability.reordered is not None),
        "yes_no": float(_yes_no(answer)), "agreement": probability.agreement or 0.0,
        "has_agreement": float(probability.agreement is not None), "unwritten": float(bool(support.unwritten)),
        "has_unwritten": float(support.unwritten is not None), "asked": support.asked or 0.0,
        "has_asked": float(support.asked is not None)}
    return {name: round(float(out[name]), 6) for name in NAMES}


__all__ = ["DIRECTION", "FLAGS", "KINDS", "NAMES", "Kind", "is_yes_no", "kind_of", "seen", "signals", "tied"]
