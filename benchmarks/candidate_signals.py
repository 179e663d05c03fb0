"""(ay) Signals a record gives at no call, tried as inputs of the fitted confidence before any is made a signal of
the product: each added alone to the signals ``calibrate.py`` fits on, and measured held out by document beside the
model without it, on the same labelled runs and folds.

    python benchmarks/candidate_signals.py RUN_DIR [RUN_DIR ...] [--folds 5] [--without [FLAG:]NAME,...]
        [--needing [KIND:]FLAG ...]

The runs and ``--without``/``--needing`` as ``calibrate.py`` takes them (the command in ``docs/support.md``), so
the first row of each kind (``signals``) is its model of every signal as ``calibrate.py`` fits it held out: the
model shipped for multiple choice and free form (figures ship the hand-set value recalibrated: too few labels). The
candidates (:data:`CANDIDATES`) are read from what an evaluated answer records: the question, what the model answered
(as ``calibrate.py`` reads ``yes_no``), retrieval's scores of the document's fragments, the document's and the
context's words, and — in runs made with ``samples`` — what the samples said (``probability.sampled``), measured on
the words an answer adds to its question. Each kind reports AUROC, ECE, the wrong answers flagged at most 15% of
right ones flagged, the unanswerable variants withheld at most 10% of right ones lost, and AUROC per dataset; a
second model of a kind (``--needing``) is reported on its answers the same way. Nothing here changes what ships: a
candidate that helps held out becomes a signal of the product (:mod:`pagemind.answering.signals`) and a refit.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from calibrate import by_dataset, chosen, flagged, held_out, load, measures, on_variants, said, within_sets
from common import write_result

if TYPE_CHECKING:
    from pagemind.retrieval.embed import Embedder

_MONTH = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_TIME = re.compile(r"\d|\b(?:" + _MONTH + r"|yesterday|today|tomorrow|week|weekend|month|year|day|morning|evening|"
                   r"night|summer|winter|spring|fall|autumn|ago|last|next|since|before|after)\b", re.IGNORECASE)
_COUNT = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|"
                    r"thousand|million|billion|dozen|several|few|many|once|twice)\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(?:unknown|not (?:mentioned|specified|stated|provided|clear|given|known)|unclear|"
                    r"no information|cannot be determined|does not (?:say|mention|specify)|likely|probably|possibly|"
                    r"might|may have|perhaps|seems?)\b", re.IGNORECASE)
_STOP = frozenset("the a an of to in on for and or is was were are be been by with at from that this what which who "
                  "whom whose when where why how did does do his her their its it as".split())


def mismatch(record: dict) -> float:
    """1 where a who/when/how-many question is answered with no name, no time or no count."""
    question, reply = (record.get("question") or "").lower(), said(record)
    if re.search(r"\b(?:who|whom|whose)\b", question):
        return float(not re.search(r"[A-Z][a-z]+", reply))
    if re.search(r"\bwhen\b|\bwhat (?:year|date|month|day|time)\b", question):
        return float(not _TIME.search(reply))
    if re.search(r"\bhow (?:many|much|old|long)\b", question):
        return float(not _COUNT.search(reply))
    return 0.0


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP]


def echo(record: dict) -> float:
    """The share of the reply's words that are the question's (1 for a reply of none)."""
    asked, reply = set(_words(record.get("question") or "")), _words(said(record))
    return sum(w in asked for w in reply) / len(reply) if reply else 1.0


def _pool(record: dict) -> list[float]:
    """Retrieval's scores of the document's fragments, highest first ([0, 0] where the method recorded none)."""
    scores = (record.get("details") or {}).get("scores")
    values = sorted(scores.values(), reverse=True) if isinstance(scores, dict) and len(scores) > 1 else []
    return values or [0.0, 0.0]


def _sampled(record: dict) -> list[str]:
    """What the answer's samples said (``probability.sampled``; none where the run was made without ``samples``)."""
    return list((record.get("probability") or {}).get("sampled") or [])


def _new(text: str, question: str) -> list[str]:
    """``text``'s content words that the question does not already say: what an answer adds to its question."""
    asked = set(_words(question))
    return [w for w in _words(text) if w not in asked]


def agree_new(record: dict) -> float:
    """The samples' agreement on what the answer adds to the question: the mean token F1 of the answer's and each
    reply's words the question does not say (a reply that restates the question around another name scores 0)."""
    from pagemind.text.words import overlap_f1

    replies, question = _sampled(record), record.get("question") or ""
    mine = _new(said(record), question)
    if not replies:
        return 0.0
    return sum(overlap_f1(mine, _new(r, question)) for r in replies) / len(replies) if mine else 1.0


def agree_held(record: dict) -> float:
    """The share of the answer's added words (:func:`agree_new`) that each reply says too, averaged: a reply may say
    more, not less."""
    replies, question = _sampled(record), record.get("question") or ""
    mine = set(_new(said(record), question))
    if not replies:
        return 0.0
    return sum(len(mine & set(_new(r, question))) / len(mine) for r in replies) / len(replies) if mine else 1.0


def spread(record: dict) -> float:
    """How far the samples agree among themselves and with the answer: the mean pairwise :func:`agree_new` F1 of all
    of them (whatever the answer said, a model that wanders gives five different things)."""
    from itertools import combinations

    from pagemind.text.words import overlap_f1

    replies, question = _sampled(record), record.get("question") or ""
    if not replies:
        return 0.0
    said_all = [_new(t, question) for t in (said(record), *replies)]
    pairs = list(combinations(said_all, 2))
    return sum(overlap_f1(a, b) if a and b else float(a == b) for a, b in pairs) / len(pairs)


@lru_cache(maxsize=1)
def _encoder() -> Embedder:
    """The embedded MiniLM, loaded once where a run has samples."""
    from pagemind.retrieval.embed import load_embedder

    return load_embedder("minilm", threads=1)


def agree_meaning(record: dict) -> float:
    """The samples' agreement in meaning: the mean cosine of the answer's MiniLM vector and each reply's (the same
    thing said in other words scores near 1; a reply that restates the question around another name does not score
    0, as its words would)."""
    from pagemind.retrieval.embed import fragment_vectors

    replies = _sampled(record)
    if not replies:
        return 0.0
    vectors = fragment_vectors(_encoder().embed([said(record), *replies]))
    return float(sum(vectors[0] @ v for v in vectors[1:]) / len(replies))


def top_z(record: dict) -> float:
    """The top fragment's score in standard deviations above the pool's mean."""
    pool = _pool(record)
    return (pool[0] - statistics.mean(pool)) / (statistics.pstdev(pool) or 1.0)


def gap(record: dict) -> float:
    """How far the top fragment's score leads the next's, as a share of it."""
    pool = _pool(record)
    return (pool[0] - pool[1]) / (abs(pool[0]) or 1.0)


CANDIDATES: dict[str, Callable[[dict], float]] = {
    "mismatch": mismatch,
    "hedged": lambda r: float(bool(_HEDGE.search(said(r)))),
    "echo": echo,
    "length": lambda r: math.log1p(len(_words(said(r)))),
    "top_z": top_z,
    "gap": gap,
    "document_words": lambda r: math.log1p(r.get("document_words") or 0),
    "context_words": lambda r: math.log1p(r.get("context_words") or 0),
    "agree_new": agree_new,  # the samples' replies (runs made with ``-O METHOD:samples=N``; 0 without)
    "agree_held": agree_held,
    "spread": spread,
    "agree_meaning": agree_meaning,
}


def candidates(record: dict) -> dict[str, float]:
    return {name: round(read(record), 6) for name, read in CANDIDATES.items()}


def tried(mine: list[dict], folds: int, names: tuple[str, ...], kind: str, label: str) -> dict:
    """The model of ``names`` and each candidate added to it, held out on ``mine`` (printed as ``label``)."""
    right = [r["right"] for r in mine]
    variant = [r["variant"] for r in mine]
    out = {}
    for extra in ("", *CANDIDATES):
        held = held_out(mine, folds, names + ((extra,) if extra else ()), kind)
        out[extra or "signals"] = {
            **measures(held, right), "flagged": flagged(held, right),
            "variants": on_variants(held, right, variant) if any(variant) else None,
            "auroc_by_dataset": {d: m["held"]["auroc"] for d, m in by_dataset(mine, right, held=held).items()}}
        one = out[extra or "signals"]
        print(f"{label:26} {extra or 'signals':15} AUROC {one['auroc']}  ECE {one['ece']}  flagged "
              f"{(one['flagged'] or {}).get('wrong_flagged')}  variants "
              f"{(one['variants'] or {}).get('variants_withheld')}  {one['auroc_by_dataset']}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--without", default="")
    parser.add_argument("--needing", action="append", default=[])
    args = parser.parse_args()
    from pagemind.answering.signals import NAMES, tied

    without, apart, needing = chosen(args.without, args.needing)
    rows = load(args.runs, extra=candidates)
    if not rows:
        sys.exit("no answer with signals in those runs")
    every = tuple(n for n in NAMES if n != "support_confidence" and n not in without)
    report: dict = {"runs": sorted({r["run"] for r in rows}), "answers": len(rows), "candidates": list(CANDIDATES),
                    "kinds": {}}
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        flag = needing.get(kind, needing.get(""))
        folds = min(args.folds, len({r["document"] for r in mine}))
        if folds < 2 or len({r["right"] for r in mine}) < 2:
            continue
        names, _ = within_sets(mine, tuple(n for n in every if not flag or n not in tied(flag)))
        report["kinds"][kind] = tried(mine, folds, names, kind, kind)
        having = [r for r in mine if flag and float(r["signals"].get(flag, 0.0)) == 1.0]
        if having and len({r["right"] for r in having}) > 1:
            own, _ = within_sets(having, tuple(n for n in every if n not in apart.get(flag or "", ())))
            label = f"{kind} with {flag}"
            report["kinds"][label] = tried(having, min(args.folds, len({r["document"] for r in having})), own, kind,
                                           label)
    write_result("candidate_signals", report)


if __name__ == "__main__":
    main()
