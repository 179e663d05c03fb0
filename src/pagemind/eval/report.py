"""Reports of a run directory: a summary per method (Markdown, CSV, JSON) with 95% confidence intervals and
the cost of each method, and a plot of score against tokens per question (``plot.py``).

Scores: a failed example counts as 0, never dropped. Intervals: Wilson for 0/1 metrics (accuracy, LR-1,
LR-2), a seeded percentile bootstrap for the others (ROUGE, F1, judge). Costs per question: answer-time LLM
calls, prompt and completion tokens (LLM-cache hits counted at full cost) and wall seconds; index tokens are
the memory builds of the run divided by the questions of the method ("all-in" = answer + index).
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .datasets import base_method
from .metrics import BINARY
from .rundir import BUILDS, EXAMPLES, RunDir

Z95 = 1.959964


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap(values: list[float], resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (seeded: the same records give the same interval)."""
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(resamples))
    lo = means[int((1 - level) / 2 * resamples)]
    hi = means[min(resamples - 1, int((1 + level) / 2 * resamples))]
    return (lo, hi)


def interval(metric: str, values: list[float]) -> tuple[float, float]:
    if metric in BINARY and all(v in (0.0, 1.0) for v in values):
        return wilson(sum(values), len(values))
    return bootstrap(values)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class MethodSummary:
    method: str
    n: int
    errors: int
    score: float | None
    ci_low: float | None
    ci_high: float | None
    metrics: dict[str, float] = field(default_factory=dict)
    calls: float | None = None
    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    tokens: float | None = None  # prompt + completion per question, answering only
    llm_seconds: float | None = None
    seconds: float | None = None  # wall seconds per question
    index_tokens: float | None = None  # memory builds of this run per question
    all_in_tokens: float | None = None
    index_unknown: int = 0  # documents whose memory came from an earlier run (cost not in this run)
    index_over_document: float | None = None  # tokens of this method's own builds / the documents' tokens
    context_words: float | None = None
    compression_rate: float | None = None
    lookups: float | None = None  # ReadAgent: pages looked up per question
    navigation_failure_rate: float | None = None  # MemWalker
    valid_action_rate: float | None = None  # MemWalker, MemGPT
    fallback_rate: float | None = None
    rater_tokens: float | None = None
    citations: float | None = None  # citations per answer
    evidence_n: int = 0  # examples with evidence labels (failed ones included)
    evidence_recall: float | None = None  # labelled spans hit / labelled spans, averaged; a failure counts 0
    evidence_precision: float | None = None  # citations on a label / citations, over the answers that cite
    evidence_support: float | None = None  # multiple choice: the chosen option's content words in the quotes
    quotes_dropped: float | None = None  # cite=quotes: the model's quotes not found in the text / its quotes
    support_auroc: float | None = None  # AUROC of the answers' confidence, right vs wrong answers
    accuracy_at_80: float | None = None  # the headline metric over the 80% most confident answers
    coverage_at_80: float | None = None  # the largest share of most confident answers of which >= 80% are right
    coverage_at_90: float | None = None  # ... of which >= 90% are right
    ece: float | None = None  # expected calibration error of the confidence as a probability of "right"
    ece_floor: float | None = None  # the median ECE a calibrated confidence of these values shows on these answers
    ece_p: float | None = None  # the share of such calibrated draws whose ECE is at least the measured one
    flagged_wrong: float | None = None  # wrong answers not labelled supported / wrong answers
    flagged_right: float | None = None  # right answers not labelled supported / right answers
    unanswerable_n: int = 0  # unanswerable questions: --unanswerable variants (not in the headline), the set's own
    abstention_recall: float | None = None  # variants the support check abstains on / variants
    abstention_precision: float | None = None  # abstentions on variants / all abstentions
    false_abstention: float | None = None  # answerable questions abstained on / answerable questions


def _v2_f1(records: list[dict[str, Any]]) -> float:
    """MMLongBench-Doc's F1 from the V2 judge's verdicts (its eval/metrics.py): recall = right answers over the
    answerable questions, precision = right answers to answerable questions over the responses that did not
    abstain (a failed or unjudged example counts as answered and wrong, as V2 counts an unjudged row)."""
    def judged(r: dict[str, Any], key: str) -> float:
        return 0.0 if r.get("status") == "error" else float((r.get("scores") or {}).get(key, 0.0))

    answerable = [r for r in records if (r.get("meta") or {}).get("evidence_kind") != "unanswerable"]
    hits = sum(judged(r, "judge") for r in answerable)
    answered = sum(1 for r in records if judged(r, "abstained") == 0.0)
    recall = hits / len(answerable) if answerable else 0.0
    precision = hits / answered if answered else 0.0
    return 2 * recall * precision / (recall + precision) if recall + precision else 0.0


def summarise_method(method: str, records: list[dict[str, Any]], builds: list[dict[str, Any]],
                     all_builds: list[dict[str, Any]], primary: str) -> MethodSummary:
    variants = [r for r in records if (r.get("meta") or {}).get("unanswerable")]
    records = [r for r in records if not (r.get("meta") or {}).get("unanswerable")]  # the headline: answerable ones
    ok = [r for r in records if r.get("status") == "ok"]
    names = sorted({k for r in ok for k in (r.get("scores") or {})})
    values = {k: [0.0 if r.get("status") == "error" else float(r["scores"][k])
                  for r in records if r.get("status") == "error" or k in (r.get("scores") or {})] for k in names}
    if primary not in values:
        values[primary] = [0.0 for r in records if r.get("status") == "error"]
    main = values.get(primary) or []
    lo, hi = interval(primary, main) if main else (None, None)
    usage = [r.get("usage") or {} for r in ok]
    s = MethodSummary(method, len(records), len(records) - len(ok), _mean(main), lo, hi,
                      metrics={k: round(v, 4) for k, vals in values.items() if (v := _mean(vals)) is not None})
    if "abstained" in values:
        s.metrics["v2_f1"] = round(_v2_f1(records), 4)
    s.calls = _mean([u.get("calls", 0) for u in usage])
    s.prompt_tokens = _mean([u.get("prompt_tokens", 0) for u in usage])
    s.completion_tokens = _mean([u.get("completion_tokens", 0) for u in usage])
    s.tokens = _mean([u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in usage])
    s.llm_seconds = _mean([u.get("seconds", 0) for u in usage])
    s.seconds = _mean([r.get("wall_seconds", 0) for r in ok])
    s.context_words = _mean([r["context_words"] for r in ok if r.get("context_words")])
    s.compression_rate = _mean([r["compression_rate"] for r in ok if r.get("compression_rate") is not None])
    base = base_method(method)
    if base in ("readagent-p", "readagent-s"):
        s.lookups = _mean([r.get("lookups", 0) for r in ok])
    if base == "memwalker":
        s.navigation_failure_rate = _mean([float(r["details"].get("navigation_failure") is not None)
                                           for r in ok if "navigation_failure" in (r.get("details") or {})])
    rates = [r["details"]["valid_action_rate"] for r in ok if "valid_action_rate" in (r.get("details") or {})]
    s.valid_action_rate = _mean(rates)
    s.fallback_rate = _mean([float(bool(r.get("fallbacks"))) for r in ok])
    s.rater_tokens = _mean([u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
                            for r in ok if (u := r.get("rater_usage"))])
    _evidence(s, records, ok)
    native = [r for r in ok if _unanswerable(r)]  # the set's own: scored by its judge and kept in the headline
    _trust(s, ok, native + [r for r in variants if r.get("status") == "ok"], primary)
    index, unknown = _index_tokens(builds, all_builds)
    own = [b for b in builds if b.get("status") == "ok" and not b.get("resumed") and b.get("document_tokens")
           and (b.get("usage") or {}).get("calls")]
    if own:
        spent = sum(b["usage"].get("prompt_tokens", 0) + b["usage"].get("completion_tokens", 0) for b in own)
        s.index_over_document = spent / sum(b["document_tokens"] for b in own)
    s.index_unknown = unknown
    if builds and records:
        s.index_tokens = index / len(records)
        s.all_in_tokens = (s.tokens or 0) + s.index_tokens
    elif base == "memgpt" or not builds:
        s.all_in_tokens = s.tokens
    return s


def _evidence(s: MethodSummary, records: list[dict[str, Any]], ok: list[dict[str, Any]]) -> None:
    """Citations per answer and the evidence metrics of :mod:`.evidence`, averaged over examples: recall over
    every labelled example (a failed one counts 0), precision over the labelled answers that cite, the support
    proxy over the multiple-choice answers (a failed one counts 0). Records of runs before citations: None."""
    if any("citations" in r for r in ok):
        s.citations = _mean([len(r.get("citations") or []) for r in ok])
    labelled = [r for r in records if r.get("labels")]
    s.evidence_n = len(labelled)
    recall = [0.0 if r.get("status") == "error" else float((r.get("evidence") or {}).get("recall") or 0.0)
              for r in labelled if r.get("status") == "error" or "evidence" in r]
    s.evidence_recall = _mean(recall)
    s.evidence_precision = _mean([float(r["evidence"]["precision"]) for r in labelled if r.get("status") == "ok"
                                  and (r.get("evidence") or {}).get("precision") is not None])
    support = [0.0 if r.get("status") == "error" else float(r["evidence"]["support"]) for r in records
               if (r.get("status") == "error" and r.get("task") == "choice")
               or (r.get("evidence") or {}).get("support") is not None]
    s.evidence_support = _mean(support)
    kept = sum(1 for r in ok for c in r.get("citations") or [] if c.get("found_by") == "quote")
    dropped = sum(1 for r in ok for f in r.get("fallbacks") or [] if str(f).startswith(QUOTE_DROPS))
    s.quotes_dropped = dropped / (kept + dropped) if kept + dropped else None


RIGHT = 0.5  # an answer whose headline score is at least this is right (accuracy 1, F1 >= 0.5) for the trust metrics
COVERAGE = 0.8  # accuracy_at_80 answers the most confident 80%


def auroc(scores: list[float], positive: list[bool]) -> float | None:
    """The area under the ROC curve of ``scores`` for telling positives from negatives (ties count half), None
    without both kinds: the chance that a random positive scores above a random negative."""
    pos = [s for s, p in zip(scores, positive) if p]
    neg = [s for s, p in zip(scores, positive) if not p]
    if not pos or not neg:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def coverage_accuracy(confidence: list[float], values: list[float], coverage: float = COVERAGE) -> float | None:
    """The mean of ``values`` over the ``coverage`` share of answers with the highest confidence (at least one)."""
    if not values:
        return None
    order = sorted(range(len(values)), key=lambda i: -confidence[i])
    kept = order[:max(1, round(coverage * len(values)))]
    return sum(values[i] for i in kept) / len(kept)


def coverage_at_precision(confidence: list[float], right: list[bool], precision: float) -> float | None:
    """The largest share of answers, the most confident first, of which at least ``precision`` are right (0 when
    not even the most confident answer is): how many answers a user could act on at that precision. Answers of one
    confidence are kept or cut together."""
    if not right:
        return None
    return _kept_at(confidence, right, precision)[0] / len(right)


def threshold_at_precision(confidence: list[float], right: list[bool], precision: float) -> float | None:
    """The confidence at or above which the answers of :func:`coverage_at_precision` are kept (None when none
    is): the threshold a user would set for that precision."""
    return _kept_at(confidence, right, precision)[1]


ABSTAIN_LEAST = 5  # answers below an abstention threshold before it counts


def abstain_below(confidence: list[float], right: list[bool], target: float) -> float | None:
    """The confidence below which answers are withheld for an abstention precision ``target``: the highest cut,
    between two answers' values, under which at least ``target`` of the answers (and at least
    :data:`ABSTAIN_LEAST`, never all of them) were wrong — and no higher than ``1 - target``, so that each answer it
    withholds was, by its own calibrated confidence, at least that likely wrong too (a cut that only the many
    near-certain wrong answers below it carry would withhold answers mostly right). None where no cut gets there."""
    rising = sorted(zip(confidence, right), key=lambda x: x[0])
    cut, misses = None, 0
    for n, (p, ok) in enumerate(rising, 1):
        misses += not ok
        if n == len(rising) or rising[n][0] == p:
            continue  # never all the answers; answers of one confidence withheld or kept together
        at = round((p + rising[n][0]) / 2, 4)  # between the last withheld and the first kept, as answers are rounded
        if n >= ABSTAIN_LEAST and misses >= target * n and p < at <= rising[n][0] and at <= 1 - target + 1e-9:
            cut = at
    return cut


def _kept_at(confidence: list[float], right: list[bool], precision: float) -> tuple[int, float | None]:
    """(how many answers, the most confident first, at least ``precision`` of them right, at most; the least
    confidence among them), answers of one confidence kept or cut together."""
    order = sorted(range(len(right)), key=lambda i: -confidence[i])
    best, least, hits = 0, None, 0
    for n, i in enumerate(order, 1):
        hits += right[i]
        tied = n < len(order) and confidence[order[n]] == confidence[i]
        if not tied and hits >= precision * n:
            best, least = n, confidence[i]
    return best, least


ECE_BINS = 10
ECE_DRAWS = 1000  # label sets drawn for :func:`ece_consistency`


def _bins(confidence: list[float], bins: int) -> list[int]:
    return [min(bins - 1, max(0, int(c * bins))) for c in confidence]


def _ece(confidence: list[float], right: list[bool], of: list[int], bins: int) -> float:
    count, said, hit = [0] * bins, [0.0] * bins, [0] * bins
    for c, ok, b in zip(confidence, right, of):
        count[b] += 1
        said[b] += c
        hit[b] += ok
    return sum(abs(said[b] - hit[b]) for b in range(bins) if count[b]) / len(right)


def expected_calibration_error(confidence: list[float], right: list[bool], bins: int = ECE_BINS) -> float | None:
    """The expected calibration error: over ``bins`` equal-width bins of confidence, the gap between the mean
    confidence and the share right, weighted by the bin's answers (0 is calibrated)."""
    if not right:
        return None
    return _ece(confidence, right, _bins(confidence, bins), bins)


def ece_consistency(confidence: list[float], right: list[bool], bins: int = ECE_BINS, draws: int = ECE_DRAWS,
                    seed: int = 0) -> tuple[float, float] | None:
    """How much of a measured ECE this many answers explain (consistency resampling, Bröcker & Smith 2007): label
    sets are drawn from the confidences themselves (each answer right with its own confidence: a perfectly
    calibrated confidence of these values), seeded. Returns (their median ECE: the floor a calibrated confidence
    shows on these answers; the share of them whose ECE is at least the one measured: a small share says the
    confidence is miscalibrated beyond what so few answers explain). On 55 answers spread over [0, 1] the floor is
    about 0.13, on 500 about 0.04."""
    if not right:
        return None
    of = _bins(confidence, bins)
    measured = _ece(confidence, right, of, bins)
    rng = random.Random(seed)
    drawn = sorted(_ece(confidence, [rng.random() < c for c in confidence], of, bins) for _ in range(draws))
    return drawn[draws // 2], sum(e >= measured - 1e-12 for e in drawn) / draws


def _unanswerable(record: dict[str, Any]) -> bool:
    """A question the set itself marks unanswerable: MMLongBench-Doc's ("Not answerable"), LongMemEval's abstention
    questions."""
    meta = record.get("meta") or {}
    return meta.get("evidence_kind") == "unanswerable" or bool(meta.get("abstention"))


def _trust(s: MethodSummary, ok: list[dict[str, Any]], variants: list[dict[str, Any]], primary: str) -> None:
    """The support metrics (issue 38) over the answers that carry a confidence: AUROC right vs wrong, accuracy at
    80% coverage, wrong and right answers flagged (not labelled supported); with unanswerable variants, abstention
    recall, precision and false abstentions (an answer abstains when ``abstain=on`` would withhold it — its support,
    or its fitted confidence under ``abstain_precision`` — whether or not the run had the reply replaced:
    ``abstain=off`` records what it would have done)."""
    judged = [r for r in ok if r.get("confidence") is not None and primary in (r.get("scores") or {})
              and not _unanswerable(r)]
    if judged:
        values = [float(r["scores"][primary]) for r in judged]
        confidence = [float(r["confidence"]) for r in judged]
        right = [v >= RIGHT for v in values]
        s.support_auroc = auroc(confidence, right)
        s.accuracy_at_80 = coverage_accuracy(confidence, values)
        s.coverage_at_80 = coverage_at_precision(confidence, right, 0.8)
        s.coverage_at_90 = coverage_at_precision(confidence, right, 0.9)
        s.ece = expected_calibration_error(confidence, right)
        s.ece_floor, s.ece_p = ece_consistency(confidence, right) or (None, None)
        flagged = [r.get("support") != "supported" for r in judged]
        wrong_n, right_n = right.count(False), right.count(True)
        s.flagged_wrong = sum(f for f, r in zip(flagged, right) if not r) / wrong_n if wrong_n else None
        s.flagged_right = sum(f for f, r in zip(flagged, right) if r) / right_n if right_n else None
    asked = [r for r in variants if "would_abstain" in r]
    s.unanswerable_n = len(variants)
    if asked:
        caught = sum(bool(r["would_abstain"]) for r in asked)
        answerable = [r for r in ok if "would_abstain" in r and not _unanswerable(r)]
        false = sum(bool(r["would_abstain"]) for r in answerable)
        s.abstention_recall = caught / len(asked)
        s.abstention_precision = caught / (caught + false) if caught + false else None
        s.false_abstention = false / len(answerable) if answerable else None


QUOTE_DROPS = ("quote not in the text", "quote too short to check")  # the fallbacks of Reader._quoted


def _index_tokens(builds: list[dict[str, Any]], all_builds: list[dict[str, Any]]) -> tuple[int, int]:
    """Tokens of this method's memory builds; a memory reused from another method of the run (ReadAgent-P/S
    share gists) costs what that build cost; one reused from an earlier run, or resumed after a kill, is counted
    as unknown."""
    cost: dict[str, int | None] = {}  # memory key -> tokens of its build (None: resumed, cost unknown)
    for b in all_builds:
        u = b.get("usage") or {}
        if b.get("memory_key") and u.get("calls"):
            tokens = u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
            cost.setdefault(b["memory_key"], None if b.get("resumed") else tokens)
    total, unknown = 0, 0
    for b in builds:
        if b.get("status") != "ok":
            continue
        u = b.get("usage") or {}
        if b.get("resumed"):  # finished after a kill: what it cost before the kill is not on record
            unknown += 1
        elif u.get("calls"):
            total += u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
        elif b.get("memory_key") in cost:  # another method's memory (ReadAgent-S on ReadAgent-P's gists)
            borrowed = cost[b["memory_key"]]
            total += borrowed or 0
            unknown += borrowed is None
        elif b.get("llm_built", True) and b.get("memory_key"):
            unknown += 1
    return total, unknown


# Example metadata that splits a set into conditions the papers plot separately: nesting level (MemGPT Fig. 7),
# needle depth, gold position (lost in the middle), length of the concatenated documents or of a BABILong haystack,
# LongMemEval's question type, LongBench v2's length class, MMLongBench-Doc's single-page / cross-page /
# unanswerable questions.
GROUP_KEYS = ("levels", "depth", "gold_position", "target_words", "target_tokens", "question_type", "length",
              "evidence_kind")


def breakdown(records: list[dict[str, Any]], methods: list[str], primary: str) -> dict[str, Any] | None:
    """The headline score per method and condition (the first of :data:`GROUP_KEYS` the examples carry), failed
    examples counted as 0; None when the set has no such condition or only one value of it."""
    key = next((k for k in GROUP_KEYS if any(k in (r.get("meta") or {}) for r in records)), None)
    if key is None:
        return None
    groups = sorted({r["meta"][key] for r in records if key in (r.get("meta") or {})}, key=lambda v: (str(type(v)), v))
    if len(groups) < 2:
        return None
    table: dict[str, dict[str, list[float]]] = {}
    for m in methods:
        for g in groups:
            rows = [r for r in records if r["method"] == m and (r.get("meta") or {}).get(key) == g]
            scores = [0.0 if r.get("status") == "error" else float((r.get("scores") or {}).get(primary, 0.0))
                      for r in rows]
            if scores:
                table.setdefault(m, {})[str(g)] = [sum(scores) / len(scores), len(scores)]
    return {"key": key, "groups": [str(g) for g in groups], "scores": table}


def _builds(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One build record per (method, document): the first that finished, else the last. A run resumed with a
    larger limit loads the memory it built earlier from the store and appends a free "reused" record: the
    first record keeps what the build cost."""
    first_ok: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}
    for b in lines:
        if "key" in b:
            last[b["key"]] = b
            if b.get("status") == "ok":
                first_ok.setdefault(b["key"], b)
    return [first_ok.get(key, b) for key, b in last.items()]


def summarise(run_dir: str | Path) -> dict[str, Any]:
    """The summary of a run directory as plain data (what summary.json holds)."""
    rd = RunDir(run_dir)
    config = rd.config()
    if config is None:
        raise ConfigError(f"{run_dir}: no config.json; not a run directory of `pagemind eval`")
    records = list(rd.latest(EXAMPLES).values())
    skipped = rd.skipped
    builds = _builds(rd.read(BUILDS))
    methods = list(dict.fromkeys(config.get("methods", []) + [r["method"] for r in records]))
    primary = config.get("primary", "accuracy")
    out = [summarise_method(m, [r for r in records if r["method"] == m], [b for b in builds if b["method"] == m],
                            builds, primary) for m in methods if any(r["method"] == m for r in records)]
    return {"config": config, "primary": primary, "examples": len({r["example_id"] for r in records}),
            "records": len(records), "unreadable_lines": skipped, "methods": [asdict(s) for s in out],
            "breakdown": breakdown(records, [s.method for s in out], primary), "published": published(records)}


def published(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """The paper's graded runs on exactly the questions of this run (FinanceBench's ``published/``): per run, how
    many answers it graded correct, incorrect and refusal by hand, and how many of the same answers pagemind's
    automatic scorer counts correct and refused (``scored_correct``, ``scored_refusal``); empty for sets without
    them."""
    seen: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    for r in records:
        meta = r.get("meta") or {}
        labels = meta.get("published")
        if isinstance(labels, dict) and labels:
            seen[r["example_id"]] = labels, meta.get("published_automatic") or {}
    out: dict[str, dict[str, int]] = {}
    for labels, automatic in seen.values():
        for run, label in labels.items():
            row = out.setdefault(run, {"n": 0, "correct": 0, "incorrect": 0, "refusal": 0, "scored_correct": 0,
                                       "scored_refusal": 0})
            row["n"] += 1
            row[label] = row.get(label, 0) + 1
            row["scored_correct"] += automatic.get(run) == "correct"
            row["scored_refusal"] += automatic.get(run) == "refusal"
    return dict(sorted(out.items()))


# --- writing -----------------------------------------------------------------------------------------
def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.{digits}f}"


def _tok(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _special(m: dict[str, Any]) -> str:
    parts = []
    if m.get("index_over_document") is not None:
        parts.append(f"index tokens {m['index_over_document']:.2f}x the document")
    if m["lookups"] is not None:
        parts.append(f"look-ups/q {m['lookups']:.2f}")
    if m["navigation_failure_rate"] is not None:
        parts.append(f"navigation failures {_pct(m['navigation_failure_rate'])}")
    if m["valid_action_rate"] is not None:
        parts.append(f"valid actions {_pct(m['valid_action_rate'])}")
    if m["fallback_rate"]:
        parts.append(f"answers with a fallback {_pct(m['fallback_rate'])}")
    return "; ".join(parts) or "–"


EVIDENCE_COLUMNS = (("citations", "citations/q"), ("evidence_recall", "evidence recall"),
                    ("evidence_precision", "evidence precision"), ("evidence_support", "evidence support (proxy)"),
                    ("quotes_dropped", "quotes dropped"))
EVIDENCE_NOTE = ("Evidence: a citation hits a labelled span when their character spans overlap; recall = labelled "
                 "spans hit / labelled spans (a failed or uncited answer counts 0), precision = citations on a label "
                 "/ citations (answers that cite); the support proxy (multiple choice, no labels) = share of the "
                 "chosen option's content words found in the cited quotes; quotes dropped (cite=quotes) = the model's "
                 "quotes not found in the text (or too short to check) / its quotes. See pagemind.eval.evidence.")


TRUST_COLUMNS = (("support_auroc", "confidence AUROC"), ("accuracy_at_80", "score at 80% coverage"),
                 ("coverage_at_80", "coverage at 80% right"), ("coverage_at_90", "coverage at 90% right"),
                 ("ece", "ECE"), ("ece_floor", "ECE if calibrated"), ("ece_p", "ECE p"),
                 ("flagged_wrong", "wrong answers flagged"), ("flagged_right", "right answers flagged"),
                 ("abstention_recall", "unanswerable abstained"), ("abstention_precision", "abstention precision"),
                 ("false_abstention", "answerable abstained"))
TRUST_NOTE = (f"Support (pagemind.answering.support): an answer is right when its headline score is at least {RIGHT}; "
              "AUROC: how well its confidence tells right from wrong (0.5 is chance); score at 80% coverage: the "
              "headline metric over the most confident 80%; coverage at 80/90% right: the largest share of answers, "
              "most confident first, of which 80/90% are right (what a user could act on at that precision); ECE: the "
              f"confidence's expected calibration error as a probability of right ({ECE_BINS} bins; 0 is "
              "calibrated); ECE if calibrated: the median ECE of a perfectly calibrated confidence of the same values "
              f"on as many answers ({ECE_DRAWS} label sets drawn from it), the part of the ECE so few answers explain; "
              "ECE p: the share of those draws whose ECE is at least the measured one (under 0.05: miscalibrated "
              "beyond chance); flagged: answers not labelled supported. With --unanswerable, each question is asked "
              "again of its document without its evidence (excluded from the headline): abstained = abstain=on would "
              "withhold the answer (the support check says the sources do not hold it, or with abstain_precision its "
              "fitted confidence is below that precision's threshold), whether or not abstain was on.")


def markdown(summary: dict[str, Any]) -> str:
    c, primary = summary["config"], summary["primary"]
    budget = (f"{c['budget']} context tokens per prompt for every method" if c.get("budget") is not None
              else "none (each method uses what the model's window allows)")
    lines = [f"# pagemind eval: {c['dataset']}", "",
             f"- model: `{c.get('model')}`" + (f"; raters: `{c.get('rater_model')}`" if c.get("rater_model") else ""),
             f"- examples: {summary['examples']} (seed {c.get('seed')}, limit {c.get('limit') or 'none'}"
             + (", whole documents" if c.get("by_document") else "") + ")"
             + (f"; dataset parameters: {json.dumps(c['params'])}" if c.get("params") else ""),
             f"- matched budget: {budget}",
             f"- headline metric: {primary} with a 95% {'Wilson' if primary in BINARY else 'bootstrap'} interval; "
             "failed examples count as 0",
             "- tokens per question = answer-time prompt + completion tokens (LLM-cache hits at full cost); "
             "index = this run's memory builds per question; all-in = both",
             *[f"- while loading: {note}" for note in c.get("dataset_notes") or []], ""]
    others = sorted({k for m in summary["methods"] for k in m["metrics"] if k != primary})
    evidence = [(key, title) for key, title in EVIDENCE_COLUMNS
                if any(m.get(key) is not None for m in summary["methods"])]
    head = ["method", "n", "errors", f"{primary} [95% CI]", *[t for _, t in evidence], *others, "tokens/q",
            "prompt/q", "completion/q", "calls/q", "s/q", "index tokens/q", "all-in tokens/q", "context words",
            "CR %", "method-specific"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in summary["methods"]:
        ci = f"{_fmt(m['score'])} [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]" if m["score"] is not None else "–"
        row = [m["method"], str(m["n"]), str(m["errors"]), ci,
               *[_fmt(m.get(k), 2) if k == "citations" else _fmt(m.get(k)) for k, _ in evidence],
               *[_fmt(m["metrics"].get(k)) for k in others],
               _tok(m["tokens"]), _tok(m["prompt_tokens"]), _tok(m["completion_tokens"]), _fmt(m["calls"], 2),
               _fmt(m["seconds"], 2), _tok(m["index_tokens"]) + ("*" if m["index_unknown"] else ""),
               _tok(m["all_in_tokens"]), _tok(m["context_words"]),
               "–" if m["compression_rate"] is None else f"{m['compression_rate']:.1f}", _special(m)]
        lines.append("| " + " | ".join(row) + " |")
    split = summary.get("breakdown")
    if split:
        lines += ["", f"{primary} by {split['key']} (examples in brackets):", "",
                  "| method | " + " | ".join(f"{split['key']} {g}" for g in split["groups"]) + " |",
                  "|" + "---|" * (len(split["groups"]) + 1)]
        for method, cells in split["scores"].items():
            lines.append(f"| {method} | " + " | ".join(
                f"{_fmt(cells[g][0])} ({cells[g][1]})" if g in cells else "–" for g in split["groups"]) + " |")
    if summary.get("published"):
        lines += ["", f"The paper's graded answers to the same {summary['examples']} question(s), graded by hand and "
                      "by pagemind's automatic scorer (which scores ours; it agrees with the hand grades on 0.83 of "
                      "the paper's answers, benchmarks (ae)):", "",
                  "| published run | n | correct | incorrect | refusal | accuracy | automatic: correct | refusal "
                  "| accuracy |", "|---|---|---|---|---|---|---|---|---|"]
        for run, row in summary["published"].items():
            n = row["n"] or None
            lines.append(f"| {run} | {row['n']} | {row['correct']} | {row['incorrect']} | {row['refusal']} | "
                         f"{_fmt(row['correct'] / n if n else None)} | {row.get('scored_correct', 0)} | "
                         f"{row.get('scored_refusal', 0)} | {_fmt(row.get('scored_correct', 0) / n if n else None)} |")
    if any(key != "citations" for key, _ in evidence):
        lines += ["", EVIDENCE_NOTE]
    trust = [(key, title) for key, title in TRUST_COLUMNS if any(m.get(key) is not None for m in summary["methods"])]
    if trust:
        lines += ["", "Support and abstention:", "", "| method | " + " | ".join(t for _, t in trust) + " |",
                  "|" + "---|" * (len(trust) + 1)]
        plain = ("support_auroc", "accuracy_at_80", "ece", "ece_floor", "ece_p")  # the others are shares
        for m in summary["methods"]:
            lines.append(f"| {m['method']} | " + " | ".join(
                _fmt(m.get(k)) if k in plain else _pct(m.get(k)) for k, _ in trust) + " |")
        lines += ["", TRUST_NOTE]
    if any(m["index_unknown"] for m in summary["methods"]):
        lines += ["", "\\* some memories were built by an earlier run (found in the store): their cost is not "
                      "counted here."]
    if summary.get("unreadable_lines"):
        lines += ["", f"{summary['unreadable_lines']} unreadable line(s) in examples.jsonl (cut short by a kill) "
                      "were skipped."]
    commands = c.get("commands") or []
    if commands:
        lines += ["", "Command(s):", "", "```", *commands, "```"]
    return "\n".join(lines) + "\n"


def csv_text(summary: dict[str, Any]) -> str:
    metrics = sorted({k for m in summary["methods"] for k in m["metrics"]})
    flat = [k for k in summary["methods"][0] if k != "metrics"] if summary["methods"] else ["method"]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(flat + metrics)
    for m in summary["methods"]:
        writer.writerow([m[k] if m[k] is not None else "" for k in flat] + [m["metrics"].get(k, "") for k in metrics])
    return buf.getvalue()


def write_report(run_dir: str | Path) -> tuple[list[Path], list[str]]:
    """Write summary.md/.csv/.json and plot.png into ``run_dir``; returns (files written, warnings)."""
    path = Path(run_dir)
    summary = summarise(path)
    files = {"summary.md": markdown(summary), "summary.csv": csv_text(summary),
             "summary.json": json.dumps(summary, indent=2, ensure_ascii=False) + "\n"}
    written = []
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
        written.append(path / name)
    warnings = list(summary["config"].get("dataset_notes") or [])
    if summary["methods"]:
        from .plot import plot_summary

        try:
            written.append(plot_summary(summary, path / "plot.png"))
        except ConfigError as err:
            warnings.append(str(err))
    return written, warnings
