"""Scores of one reply against its gold: accuracy, ROUGE-1/2/L/Lsum F, token F1, key-value matches, LoCoMo F1.

* ROUGE comes from Google's ``rouge-score`` (the maintained implementation the papers' numbers use), with the
  Porter stemmer. ``rougeLsum`` needs sentences on separate lines; its own splitter needs NLTK data that is
  not available offline, so sentences are split here with a regular expression and joined with newlines.
* Token F1 is LongBench's (SQuAD normalisation: lower case, no punctuation, no articles).
* LoCoMo F1 follows LoCoMo's ``task_eval/evaluation.py``: Porter-stemmed tokens, "and" dropped too; category
  1 averages the best F1 per comma-separated gold part, category 3 scores the gold before ";", category 5
  (adversarial) is 1 when the reply says the information is not available.
* With several references, every metric takes the best reference.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ..answering.support import TEXT_SUBJECT
from ..errors import ConfigError
from ..text.words import VERDICT, overlap_f1
from .datasets import Example

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
INSTALL_HINT = "install the evaluation extra: pip install 'pagemind[eval]'"
_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")


# --- normalisation and token F1 --------------------------------------------------------------------
def normalize_answer(text: str) -> str:
    """SQuAD/LongBench normalisation: lower case, no punctuation, no a/an/the, single spaces."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """LongBench's ``qa_f1_score`` for English."""
    return overlap_f1(normalize_answer(prediction).split(), normalize_answer(reference).split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def best(metric, prediction: str, references: Iterable[str]) -> float:
    return max((metric(prediction, r) for r in references), default=0.0)


# --- ROUGE -----------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _scorer() -> Any:
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        raise ConfigError(f"ROUGE needs rouge-score; {INSTALL_HINT}") from None
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True, split_summaries=False)


def sentence_lines(text: str) -> str:
    """One sentence per line (what rougeLsum splits summaries on)."""
    return "\n".join(s.strip() for line in text.splitlines() for s in _SENTENCE.split(line) if s.strip())


def rouge(prediction: str, references: Iterable[str]) -> dict[str, float]:
    """ROUGE-1/2/L/Lsum F-measures, each the best over the references."""
    out = {k: 0.0 for k in ROUGE_TYPES}
    pred = sentence_lines(prediction)
    for reference in references:
        scores = _scorer().score(sentence_lines(reference), pred)
        for k in ROUGE_TYPES:
            out[k] = max(out[k], scores[k].fmeasure)
    return out


# --- key-value and LoCoMo --------------------------------------------------------------------------
def kv_correct(prediction: str, reference: str, rule: str = "contains") -> float:
    """``contains``: the value appears in the reply (Lost in the Middle); ``last-uuid``: the last UUID in the
    reply is the value (MemGPT nested KV, where intermediate keys are UUIDs too)."""
    if rule == "last-uuid":
        found = UUID.findall(prediction.lower())
        return float(bool(found) and found[-1] == reference.lower())
    return float(reference.lower() in prediction.lower())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    try:
        from nltk.stem import PorterStemmer
    except ImportError:
        raise ConfigError(f"LoCoMo F1 needs NLTK's Porter stemmer; {INSTALL_HINT}") from None
    return PorterStemmer()


NUMBER_WORDS = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def _locomo_tokens(text: str, numbers: bool = False) -> list[str]:
    text = str(text).replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the|and)\b", " ", text)
    words = text.split()
    if numbers:  # "two" and "2" one token (the official scorer does not do this: f1 stays as it scores)
        words = [NUMBER_WORDS.get(w, w) for w in words]
    return [_stemmer().stem(w) for w in words]


def locomo_f1(prediction: str, answer: str, category: int, numbers: bool = False) -> float:
    """LoCoMo's per-category QA score, as its official scorer (snap-research/locomo ``task_eval/evaluation.py``)
    computes it: "2 roadtrips" against "two" scores 0 there. ``numbers``: the same with number words read as
    digits (zero to twenty), reported beside it as ``f1_numbers``."""
    if category == 5:
        low = prediction.lower()
        return float("no information available" in low or "not mentioned" in low)
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category == 1:
        parts = [p.strip() for p in prediction.split(",")]
        golds = [g.strip() for g in answer.split(",")]
        return sum(max(overlap_f1(_locomo_tokens(p, numbers), _locomo_tokens(g, numbers)) for p in parts)
                   for g in golds) / len(golds)
    return overlap_f1(_locomo_tokens(prediction, numbers), _locomo_tokens(answer, numbers))


# --- per example -----------------------------------------------------------------------------------
def score(example: Example, text: str, choice: int | None = None) -> dict[str, float]:
    """Every automatic metric of ``example``'s task for a reply (``choice`` for multiple choice)."""
    if example.task == "choice":
        return {"accuracy": float(choice is not None and choice == example.gold)}
    refs = example.references
    if example.task == "kv":
        rule = str(example.meta.get("match", "contains"))
        return {"accuracy": max(kv_correct(text, r, rule) for r in refs)}
    if example.task == "open":
        return {}  # judged by an LLM (raters.judge)
    out: dict[str, float] = {"f1": best(token_f1, text, refs)}
    if example.meta.get("rater") == "financebench":
        return {**out, **financebench(text, refs[0], example.question)}
    if example.dataset == "locomo":
        category = int(example.meta.get("category", 4))
        out["f1"] = max(locomo_f1(text, r, category) for r in refs)
        out["f1_numbers"] = max(locomo_f1(text, r, category, numbers=True) for r in refs)
        out["em"] = best(exact_match, text, refs)
        return out
    if example.task == "summary":
        out.update(rouge(text, refs))
    else:
        out["em"] = best(exact_match, text, refs)
    return out


_RECALL = 0.5  # a worded gold answer's content words the reply holds at least, to count as right
# what a reply that will not answer says in its opening sentences, beside support.declined's "the text does not say":
# that it cannot see the filing, has no data, would need more, or cannot work the figure out
_REFUSES = re.compile(
    r"^\W*(?:I['’]?m sorry|I apologi[sz]e)\b|\bas an AI\b|"
    r"\b(?:do|does)\s*(?:not|n['’]t) have (?:real-time |direct |the |any |specific |enough |sufficient )*"
    r"(?:access|data|information|details|figures)\b|"
    r"\b(?:I|we) (?:would|will) need (?:to have |to know |to see |more |specific |the |additional )|"
    r"\b(?:impossible|not possible) to (?:calculate|determine|answer|say|compute|provide)|"
    r"\b(?:cannot|can['’]t|could not|unable to) (?:be )?(?:directly |accurately |precisely )?"
    r"(?:calculated?|determined?|answered|provided?|computed?|found)\b|"
    r"\b" + TEXT_SUBJECT + r"\s+(?:\w+\s+)?do(?:es)?\s*(?:not|n['’]t) (?:explicitly |specifically |directly )?"
    r"(?:state|include|contain|provide|mention|show|list|disclose|say|give)\b|"
    r"\bthere is no (?:specific |explicit |direct )?(?:mention|information|data)|"
    r"^\W*without (?:the |access|specific|more)",
    re.IGNORECASE)
_OPENING = 3  # the sentences a refusal is looked for in (a long answer that declines says so first)
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|none|cannot)\b|n['’]t\b", re.IGNORECASE)
_LEAD_IN = re.compile(r"^\W*(?:based on|according to|from|after|looking at|in|per)\b[^,]{0,80},\s*", re.IGNORECASE)
_SHORT = 12  # a reply of at most this many words may name the gold's thing in fewer words than half of the gold's


_NAMES_ASKED = re.compile(r"^\W*(?:which|who)\b|\bamong\b[^?]*\bwhich\b", re.IGNORECASE)
_PERIOD = re.compile(r"^(?:FY|Q|H)\d*$")  # "FY 2023", "Q2": a period, not a name
_NAMED_WORDS = 2  # a name question's answer: the gold's first content words outside the question, this many


def financebench(text: str, gold: str, question: str = "") -> dict[str, float]:
    """FinanceBench's automatic score (the paper graded by hand; ``benchmarks/financebench_scorer.py`` measures this
    against its grades): ``refused`` when the reply declines in its opening sentences (:func:`refuses`); else a yes/no
    gold is right when the reply says the same (:func:`polarity`); a question asking which or who (a region, a
    segment, a customer) is right when the reply holds half the name the gold gives (:func:`named_in_gold`: the
    gold's figure, "~90% of EBITDAR", is beside the point); a gold with a figure is right when the reply states it
    within rounding after units and scales ("$1,577 million" = "$1.577 billion" = "1577"); any other gold when the
    reply holds half its content words, or is a short reply whose own words (those the question does not hold) are
    all the gold's ("Packaging" for "Amcor is a global leader in packaging production"). ``numeric``: 1 where the
    gold has a figure and the question asks for one."""
    from ..text.numbers import matches

    refused = refuses(text)
    name = named_in_gold(gold, question) if _NAMES_ASKED.search(question) else []
    numeric = None if name else matches(text, gold)
    said_words = set(normalize_answer(text).split())
    if refused:
        right = False
    elif (asked := VERDICT.match(gold)) is not None:
        right = polarity(text, question) == asked.group(1).lower()
    elif name:
        right = len(set(name) & said_words) >= _RECALL * len(name)
    elif numeric is not None:
        right = numeric
    else:
        words = set(normalize_answer(gold).split())
        own = _stems(_content(said_words)) - _stems(set(normalize_answer(question).split()))
        right = bool(words) and (len(words & said_words) >= _RECALL * len(words)
                                 or (bool(own) and len(text.split()) <= _SHORT and own <= _stems(words)))
    return {"accuracy": float(right), "refused": float(refused), "numeric": float(numeric is not None)}


def financebench_grade(text: str, gold: str, question: str = "") -> str:
    """The reply graded as the paper's graders label an answer: ``correct``, ``incorrect`` or ``refusal``
    (:func:`financebench`)."""
    scored = financebench(text, gold, question)
    return "refusal" if scored["refused"] else "correct" if scored["accuracy"] else "incorrect"


def refuses(text: str) -> bool:
    """Whether a reply declines to answer: empty, a stand-in for no answer ("N/A", "not found":
    :func:`~pagemind.answering.support.placeholder`), or the text-does-not-say of
    :func:`~pagemind.answering.support.declined` (a short reply), or a no-access, no-data, would-need or
    cannot-work-it-out sentence among its first :data:`_OPENING`."""
    from ..answering.support import declined, placeholder
    from ..text.words import sentences

    if not text.strip() or declined(text) or placeholder(text):
        return True
    return any(_REFUSES.search(s) for s in sentences(text)[:_OPENING])


def polarity(text: str, question: str = "") -> str | None:
    """The yes or no a reply gives: its opening word, else its first sentence that is not a lead-in to a list
    (ending in ":"), read past "Based on the filing, ...": "no" when its main clause (before its first comma) holds
    a negation ("growth is not expected to accelerate"), else "yes" — None when that sentence is not about the
    question (holds under a third of its content words: a reply that talks of something else says neither)."""
    from ..text.words import sentences

    said = VERDICT.match(text)
    if said is not None:
        return said.group(1).lower()
    whole = next((s for s in sentences(text) if not s.rstrip().endswith(":")), "")
    asked = _content(set(normalize_answer(question).split()))

    def about(sentence: str) -> bool:
        return not asked or len(asked & set(normalize_answer(sentence).split())) >= len(asked) / 3

    first = _LEAD_IN.sub("", whole)
    if not about(first):  # what followed the comma was not the main clause ("In FY2023 X is not..., per Y")
        first = whole
    if not about(first):
        return None
    return "no" if _NEGATION.search(first.split(",")[0]) else "yes"  # its main clause: "accelerate, not slow"


def _stems(words: set[str]) -> set[str]:
    """``words`` lightly stemmed ("operates" is "operate"'s): a short reply's own words are compared so."""
    from ..text.words import terms

    return {t for w in words for t in terms(w)}


def _content(words: set[str]) -> set[str]:
    from ..text.words import STOPWORDS

    return {w for w in words if w not in STOPWORDS and not any(c.isdigit() for c in w)}


def named_in_gold(gold: str, question: str) -> list[str]:
    """The name a gold answer gives to a which/who question, as normalised words: its capitalised words that the
    question does not hold ("Las Vegas resorts contributed ~90%" -> las, vegas), else its first
    :data:`_NAMED_WORDS` content words the question does not hold ("the biggest short term investment is in
    corporate bonds" -> biggest, corporate), both from the gold's first clause."""
    from ..text.words import STOPWORDS

    clause = re.split(r"[,.;:(]\s", gold + " ", maxsplit=1)[0]
    asked = set(normalize_answer(question.replace("'s ", " ")).split())
    said = [w.removesuffix("'s").removesuffix("’s") for w in re.findall(r"[\w'’&-]+", clause)]
    first_is_name = len(said) > 1 and (said[0].isupper() or said[1][:1].isupper())  # "MGM ...", "Las Vegas"
    words = [(w, i) for i, w in enumerate(said) if normalize_answer(w) and normalize_answer(w) not in asked]
    capitals = [normalize_answer(w) for w, i in words if w[0].isupper() and (i or first_is_name)
                and normalize_answer(w) not in STOPWORDS and not _PERIOD.match(w)]
    if capitals:
        return capitals
    return [normalize_answer(w) for w, _ in words if normalize_answer(w) not in STOPWORDS
            and not any(c.isdigit() for c in w)][:_NAMED_WORDS]


# 0/1 per example: Wilson intervals in reports
BINARY = frozenset({"accuracy", "em", "lr1", "lr2", "refused", "numeric"})
