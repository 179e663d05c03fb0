"""(ad) A confidence fitted on labelled answers: one logistic model per kind of question over the signals every
evaluated answer records (``pagemind.answering.signals``), judged on held-out documents against the support check's
hand-set confidence.

    python benchmarks/calibrate.py RUN_DIR [RUN_DIR ...] [--folds 5] [--without [FLAG:]NAME,...]
        [--needing [KIND:]FLAG ...] [--min 100] [--min-recalibrated 50] [--write]

Each RUN_DIR is a ``pagemind eval run`` directory whose examples carry ``signals`` (runs from this version on; a
model's answers are replayed from the LLM cache when the same run is made again). An answer is right when its
headline score is at least 0.5, or as graded by hand where the run directory holds ``grades.jsonl`` (one
``{"example_id", "method", "right"}`` a line: a free-form answer a token-F1 score undercounts). Folds are by
document, never by question: a document's answers are all held out together. Each fit's ridge penalty is the one of
``L2S`` that gave the lowest log loss held out within the answers it is fitted on (nested: a held-out fold never
chose its model's). Per kind (choice, numeric, free) and per dataset: AUROC, ECE and coverage at 80/90% right of the
fitted probability on held-out folds beside the hand-set confidence of the same answers, and each signal's AUROC alone
(``alone``: no fit; a signal that may only lower the confidence read negated). ``--write`` fits each kind
on all its answers and writes ``src/pagemind/answering/calibration.json`` — only kinds whose answers come from
enough documents for two folds: the model of all signals where its held-out AUROC beats the hand-set one and there
are ``--min`` answers (100), else the hand-set value recalibrated (one increasing map: the same ranking, a
probability; two numbers to fit) where that is better calibrated held out and there are ``--min-recalibrated``
answers (50); the others keep the hand-set value. Where the runs hold unanswerable variants (``--unanswerable``),
each kind also reports the share of the variants answered wrong that an abstention withholds when set to withhold at
most 10% of the answerable right answers (held out, fitted and hand-set).
``--without`` leaves the named signals (and their ``has_*`` flags) out of every fit: what a signal adds, measured on
the same answers with it and without. ``--needing FLAG`` (a call's flag, e.g. ``has_reordered``; ``KIND:FLAG`` for
one kind's, repeatable): each kind's model is fitted without that call's signals, and a second one on the answers
that have the flag set, with them, in two forms: with every signal again, and over the first (its held-out logit,
``base``, beside the call's own signals: two or three weights where a few hundred answers have the flag). The form
that ranks those answers better held out ships beside the first (``needs``:
:func:`pagemind.answering.calibration.model_for`) where it ranks them better than the first; each form is also
measured on the kind's answers together, as it would ship. ``--without FLAG:NAME`` leaves a signal out of that
second model only (``has_reordered:lift``: a choice asked again with its options reversed is read without its prior,
so the product skips the prior's call there).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from common import ROOT, read_grades, write_result

if TYPE_CHECKING:
    from pagemind.answering.calibration import Fitted

RIGHT = 0.5
GRADES = "grades.jsonl"  # a run's answers graded by hand ({"example_id", "method", "right"}), read before its scores


def load(dirs: list[Path], extra: Callable[[dict], dict[str, float]] | None = None) -> list[dict]:
    """The labelled answers of the run directories ``dirs``; a question a method answered in two of them (a variants
    run asks the answerable questions again) counts once, as the first directory given has it. ``extra``: values
    read from each record added to its signals (``candidate_signals.py``'s candidates)."""
    rows = []
    taken: set[tuple[str, str, str]] = set()
    for folder in dirs:
        config = json.loads((folder / "config.json").read_text())
        primary = config.get("primary", "accuracy")
        records = []
        for line in (folder / "examples.jsonl").read_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        grades = read_grades(folder / GRADES, {(r["example_id"], r["method"]): r.get("prediction") or ""
                                               for r in records})
        for r in records:
            if r.get("status") != "ok" or not r.get("signals") or primary not in (r.get("scores") or {}):
                continue
            if (r["dataset"], r["example_id"], r["method"]) in taken:
                continue
            taken.add((r["dataset"], r["example_id"], r["method"]))
            rows.append({"dataset": r["dataset"], "document": r["document_id"], "kind": r.get("kind", "free"),
                         "method": r["method"], "signals": derived(r) | (extra(r) if extra else {}),
                         "right": grades.get((r["example_id"], r["method"]), float(r["scores"][primary]) >= RIGHT),
                         "graded": (r["example_id"], r["method"]) in grades, "run": folder.name,
                         "variant": bool((r.get("meta") or {}).get("unanswerable"))})
    return rows


def derived(record: dict) -> dict:
    """The record's signals, with those a run made before they were recorded can be read from the record itself:
    ``yes_no``, from its question and what the model answered — the draft where the answer was withheld, the reply
    as given where a short phrase was scored (``--short-answers``), else the prediction — as the answer in use reads
    it (:func:`pagemind.answering.signals.is_yes_no`); the ``agreement``, read anew from the sampled replies the
    record kept (``probability.sampled``) as the product reads them now
    (:func:`pagemind.answering.probability.agreement`: a reply with no verdict agrees by the words of the answer's
    claim, twenty-seventh session) — against the reply they were read against (``probability.against``, recorded
    since the twenty-eighth session), or in a record made before it, a verdict's only against what the model
    answered: another answer's may have been rewritten after its samples were read (a figure computed by
    pagemind)."""
    from pagemind.answering.probability import agreement
    from pagemind.answering.signals import is_yes_no

    signals = dict(record["signals"])
    if "yes_no" not in signals:
        signals["yes_no"] = float(record.get("kind") != "choice" and is_yes_no(record.get("question") or "",
                                                                               said(record)))
    probability = record.get("probability") or {}
    against = probability.get("against") or (said(record) if signals["yes_no"] == 1.0 else "")
    if signals.get("has_agreement") and against:
        agreed = agreement(record.get("question") or "", against, probability.get("sampled") or [])
        if agreed is not None:
            signals["agreement"] = agreed
    return signals


def said(record: dict) -> str:
    """What the model answered, as a record keeps it: the draft where the answer was withheld, the reply as given
    where a short phrase was scored (``--short-answers``), else the prediction."""
    return record.get("draft") or (record.get("details") or {}).get("reply") or record.get("prediction") or ""


def thresholds(confidence: list[float], right: list[bool]) -> dict:
    """The confidence thresholds a user would set, read off held-out answers: keep only answers at or above
    ``keep_at_80``/``keep_at_90`` and that many of them were right; abstain below ``abstain_at_90_wrong`` and at
    least 90% of those were wrong (None where no threshold gets there)."""
    from pagemind.eval.report import abstain_below, threshold_at_precision

    out: dict = {}
    for target in (0.8, 0.9):
        keep = threshold_at_precision(confidence, right, target)
        out[f"keep_at_{round(target * 100)}"] = None if keep is None else round(keep, 3)
    wrong_at = abstain_below(confidence, right, 0.9)
    out["abstain_at_90_wrong"] = None if wrong_at is None else round(wrong_at, 3)
    return out


TARGETS = (0.6, 0.7, 0.8, 0.9, 0.95)  # abstention precisions a shipped model records a threshold for


def withheld(confidence: list[float], right: list[bool], cut: float) -> dict | None:
    """Abstention below ``cut``: the share of answers withheld, the share of those that were wrong (the abstention's
    precision), the share of wrong answers caught and of right answers lost (None where nothing is below)."""
    held = [ok for p, ok in zip(confidence, right) if p < cut]
    if not held:
        return None
    wrong, wrong_total, right_total = sum(not ok for ok in held), sum(not r for r in right), sum(right)
    return {"below": round(cut, 4), "withheld": round(len(held) / len(right), 3),
            "wrong_share": round(wrong / len(held), 3),
            "wrong_caught": round(wrong / wrong_total, 3) if wrong_total else None,
            "right_lost": round((len(held) - wrong) / right_total, 3) if right_total else None}


MOST_LOST = 0.10  # right answers a user would let an abstention withhold (issue 51's goal: at most 10%)


def on_variants(confidence: list[float], right: list[bool], variant: list[bool],
                ruled: list[bool] | None = None) -> dict | None:
    """Unanswerable variants under the abstention a user would set: the highest cut that withholds at most
    :data:`MOST_LOST` of the answerable right answers (read off these same held-out answers), and the share of the
    variants answered wrong that it withholds (None without both). Given ``ruled`` (each answer withheld whatever
    its confidence, :func:`ruled`), also the same with them withheld (``with_rules``: as the product withholds)."""
    answerable = sum(ok and not v for ok, v in zip(right, variant))
    wrong = sum(v and not ok for ok, v in zip(right, variant))
    if not answerable or not wrong:
        return None

    def withholding(rules: list[bool]) -> dict:
        """The cut and what it withholds, the ``rules``' answers withheld at any cut: the cut takes what they leave
        of the right answers a user would lose."""
        lost = sum(r and ok and not v for r, ok, v in zip(rules, right, variant))
        free = [(p, ok and not v) for p, r, ok, v in zip(confidence, rules, right, variant) if not r]
        allowed = [c for c in sorted({p for p, _ in free})
                   if lost + sum(p < c for p, kept in free if kept) <= MOST_LOST * answerable]
        at = allowed[-1] if allowed else min(confidence)
        held = [r or p < at for p, r in zip(confidence, rules)]
        return {"below": round(at, 4),
                "right_lost": round(sum(h and ok and not v for h, ok, v in zip(held, right, variant)) / answerable, 3),
                "variants_withheld": round(sum(h and v and not ok for h, ok, v in zip(held, right, variant)) / wrong,
                                           3)}

    out = {**withholding([False] * len(confidence)), "variants_wrong": wrong}
    if ruled is not None and any(ruled):
        out["with_rules"] = withholding(ruled)
    return out


def ruled(row: dict) -> bool:
    """Whether the product withholds an answer whatever its confidence (:func:`pagemind.answering.support.abstains`,
    as ``--abstain auto`` does: never a multiple choice): the model said the text does not hold it, or the question
    asks of a name the document never writes."""
    return row.get("kind") != "choice" and bool(row["signals"].get("declined") or row["signals"].get("unwritten"))


FLAG_LOST = 0.15  # right answers a flag may catch (issue 51's goal: at least 70% of wrong answers flagged at 15%)


def flagged(confidence: list[float], right: list[bool]) -> dict | None:
    """Wrong answers flagged where at most :data:`FLAG_LOST` of the right ones are: the highest cut that flags
    (``confidence`` below it) no more of the right answers, and the share of the wrong ones it flags."""
    good = [p for p, ok in zip(confidence, right) if ok]
    bad = [p for p, ok in zip(confidence, right) if not ok]
    if not good or not bad:
        return None
    cuts = [c for c in sorted(set(confidence)) if sum(p < c for p in good) <= FLAG_LOST * len(good)]
    cut = cuts[-1] if cuts else min(confidence)
    return {"below": round(cut, 4), "right_flagged": round(sum(p < cut for p in good) / len(good), 3),
            "wrong_flagged": round(sum(p < cut for p in bad) / len(bad), 3)}


def curve(confidence: list[float], right: list[bool], steps: int = 10) -> list[dict]:
    """:func:`withheld` at thresholds spread over the confidence's values (quantiles)."""
    values = sorted(set(confidence))
    cuts = sorted({values[min(len(values) - 1, round(k * (len(values) - 1) / steps))] for k in range(1, steps + 1)})
    return [w for w in (withheld(confidence, right, cut) for cut in cuts) if w is not None]


def measures(confidence: list[float], right: list[bool]) -> dict:
    from pagemind.eval.report import auroc, coverage_at_precision, ece_consistency, expected_calibration_error

    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    floor, p = ece_consistency(confidence, right) or (None, None)
    return {"n": len(right), "right": sum(right), "auroc": r(auroc(confidence, right)),
            "ece": r(expected_calibration_error(confidence, right)), "ece_floor": r(floor), "ece_p": r(p),
            "coverage_at_80": r(coverage_at_precision(confidence, right, 0.8)),
            "coverage_at_90": r(coverage_at_precision(confidence, right, 0.9))}


HAND = ("support_confidence",)  # the recalibration's one signal: the hand-set value itself


def within_sets(mine: list[dict], names: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """The signals a model may read, and those left out: a signal constant within each dataset that differs between
    them names the dataset, not the answer (``has_similarity``: only the filings' reader cites with MiniLM), and
    would have the model learn which set an answer came from; one no run recorded (``margin`` in runs made before it
    was) has nothing to teach. (A signal the same for every answer stays: a flag every labelled answer had set is
    what tells the model, in use, to read an answer lacking the signal at its labels' mean.)"""
    from pagemind.answering.signals import FLAGS, seen

    kept, left = [], []
    sets = sorted({r["dataset"] for r in mine})
    for name in names:
        if not any(name in r["signals"] for r in mine):
            left.append(name)
            continue
        values = {d: {seen(r["signals"], name) for r in mine if r["dataset"] == d} for d in sets}
        if len(sets) > 1 and all(len(v) == 1 for v in values.values()) and len(set().union(*values.values())) > 1:
            left.append(name)
        else:
            kept.append(name)
    # a signal goes with its flag: read without it, an answer lacking the signal would read its 0, not the labels' mean
    unflagged = [name for name in kept if FLAGS.get(name) in left]
    return tuple(n for n in kept if n not in unflagged), left + unflagged


L2S = (0.3, 1.0, 3.0, 10.0, 30.0)  # the ridge penalties a fit chooses among, by held-out log loss


def fold_of(documents: list[str], folds: int) -> dict[str, int]:
    """Each document's fold: the documents in one seeded order, dealt round."""
    order = list(documents)
    random.Random(0).shuffle(order)
    return {d: i % folds for i, d in enumerate(order)}


def predicted(mine: list[dict], folds: int, names: tuple[str, ...], kind: str, l2: float | None) -> list[float]:
    """Each answer's probability from a model fitted on the other folds' documents (``names``: its signals; ``l2``:
    its ridge penalty, or None: chosen on those documents alone by :func:`penalty`)."""
    from pagemind.answering.calibration import fit

    fold = fold_of(sorted({r["document"] for r in mine}), folds)
    held: list[float] = [0.0] * len(mine)
    for f in range(folds):
        train = [r for r in mine if fold[r["document"]] != f]
        if len({r["right"] for r in train}) < 2:
            for i, r in enumerate(mine):
                if fold[r["document"]] == f:
                    held[i] = sum(t["right"] for t in train) / max(1, len(train))
            continue
        chosen_l2 = penalty(train, folds, names, kind) if l2 is None else l2
        model = fit([r["signals"] for r in train], [r["right"] for r in train], names, kind, l2=chosen_l2)
        for i, r in enumerate(mine):
            if fold[r["document"]] == f:
                held[i] = model.probability(r["signals"])
    return held


def penalty(mine: list[dict], folds: int, names: tuple[str, ...], kind: str) -> float:
    """The ridge penalty of :data:`L2S` whose fits gave ``mine`` the lowest log loss held out by document (folds
    within these answers only: a fit judged on held-out folds never chose its penalty on them)."""
    import math

    folds = min(folds, len({r["document"] for r in mine}))
    if folds < 2 or len({r["right"] for r in mine}) < 2:
        return L2S[1]

    def loss(l2: float) -> float:
        held = predicted(mine, folds, names, kind, l2)
        return -sum(math.log(min(max(p if r["right"] else 1 - p, 1e-9), 1.0)) for p, r in zip(held, mine))

    return min(L2S, key=loss)


def held_out(mine: list[dict], folds: int, names: tuple[str, ...], kind: str) -> list[float]:
    """Each answer's probability from a model fitted on the other folds' documents, its penalty chosen on those."""
    return predicted(mine, folds, names, kind, None)


def by_dataset(rows: list[dict], right: list[bool], **series: list[float]) -> dict:
    """Each named series of confidences (one per row of ``rows``) measured over each dataset's answers."""
    out = {}
    for dataset in sorted({r["dataset"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["dataset"] == dataset]
        out[dataset] = {name: measures([values[i] for i in idx], [right[i] for i in idx])
                        for name, values in series.items()}
    return out


def answers_of(rows: list[dict]) -> str:
    """A shipped model's ``source``: how many answers of which sets it was fitted on."""
    return f"{len(rows)} answers of {', '.join(sorted({r['dataset'] for r in rows}))}"


def ship(model: Fitted, abstain_below: dict, models: list[dict], needs: tuple[str, ...] = ()) -> dict:
    """``model`` as written: with the (precision, threshold) pairs its held-out answers reached (``abstain_below``,
    the targets some threshold reached) and the flags it needs, appended to ``models``."""
    whole = replace(model, below=tuple((float(t), b) for t, b in abstain_below.items() if b is not None), needs=needs)
    models.append(whole.as_dict())
    return whole.as_dict()


def special(args: argparse.Namespace, mine: list[dict], held: list[float], kind: str, flag: str,
            every: tuple[str, ...], models: list[dict]) -> dict | None:
    """The second model of ``kind``, for answers with ``flag`` set, in two forms fitted on those answers: with every
    signal (``every``), and over the kind's model (``stacked``: its logit, ``held`` out, as :data:`BASE` beside the
    signals the flag stands for) — each one's held-out measures beside the kind's model's on the same answers, and
    the kind's answers together as each would ship. The form that ranks those answers better held out is appended
    to ``models`` with ``needs`` where ``--write`` is given, there are ``--min`` of them and it ranks them better
    than the kind's model."""
    import math

    from pagemind.answering.calibration import BASE, fit
    from pagemind.answering.signals import tied
    from pagemind.eval.report import abstain_below

    idx = [i for i, r in enumerate(mine) if float(r["signals"].get(flag, 0.0)) == 1.0]
    if not idx:
        return None
    having = [mine[i] for i in idx]
    documents = sorted({r["document"] for r in having})
    folds = min(args.folds, len(documents))
    names, between = within_sets(having, every)
    right = [r["right"] for r in having]
    if folds < 2 or len(set(right)) < 2:
        return {"n": len(having), "shipped": False}
    theirs = [held[i] for i in idx]
    # over the kind's model: each answer's logit from a fit that never saw its document, the call's signals beside
    over = [{**r, "signals": {**r["signals"], BASE: math.log(max(p, 1e-9) / max(1 - p, 1e-9))}}
            for r, p in zip(having, theirs)]
    forms = {"fitted": (having, names), "stacked": (over, (BASE, *sorted(tied(flag) - {flag})))}
    variant = [r["variant"] for r in having]
    every_right, every_variant = [r["right"] for r in mine], [r["variant"] for r in mine]
    rule, every_rule = [ruled(r) for r in having], [ruled(r) for r in mine]
    out: dict = {"n": len(having), "documents": len(documents), "left_out": between, "general": measures(theirs, right),
                 "flagged": {"general": flagged(theirs, right)}, "together": {}}
    if any(variant):
        out["variants"] = {"general": on_variants(theirs, right, variant, rule)}
    series: dict[str, list[float]] = {"general": theirs}
    for form, (rows, read) in forms.items():
        own = series[form] = held_out(rows, folds, read, kind)
        out[form] = measures(own, right)
        out["flagged"][form] = flagged(own, right)
        if any(variant):
            out["variants"][form] = on_variants(own, right, variant, rule)
        # the kind as it would ship: this form's held-out confidence where the flag is set, the kind's elsewhere
        both = list(held)
        for i, p in zip(idx, own):
            both[i] = p
        out["together"][form] = {"measures": measures(both, every_right), "flagged": flagged(both, every_right),
                                 "variants": on_variants(both, every_right, every_variant, every_rule)
                                 if any(every_variant)
                                 else None}
    out["by_dataset"] = by_dataset(having, right, **series)
    ships = max(forms, key=lambda form: (out[form]["auroc"] or 0, form == "stacked"))  # a tie: the fewer weights
    rows, read = forms[ships]
    out["ships"] = ships
    out["l2"] = penalty(rows, folds, read, kind)  # the fit on them all's, chosen held out
    better = (out[ships]["auroc"] or 0) > (out["general"]["auroc"] or 0)
    out["abstain_below"] = {str(t): abstain_below(series[ships], right, t) for t in TARGETS}
    out["shipped"] = bool(args.write and len(having) >= args.min and better)
    if out["shipped"]:
        model = fit([r["signals"] for r in rows], right, read, kind,
                    source=f"{answers_of(having)} with {flag}" + (f", over the {kind} model" if ships == "stacked"
                                                                   else "") + f"; L2 {out['l2']:g}", l2=out["l2"])
        out["model"] = ship(model, out["abstain_below"], models, needs=(flag,))
    print(f"{kind} with {flag}", json.dumps({k: out[k] for k in ("n", "fitted", "stacked", "general", "flagged",
                                                                      "variants", "together", "ships", "l2",
                                                                      "shipped") if k in out}),
          flush=True)
    return out


def chosen(without: str, needing: list[str]) -> tuple[set[str], dict[str, set[str]], dict[str, str]]:
    """``--without`` and ``--needing`` read: the signals left out of every fit, those left out of the second model of
    the answers with a flag only (``FLAG:NAME``), and the flag each kind's second model needs ("": every kind's); a
    flag goes where every signal it stands for goes. A name that is no signal, flag or kind exits with what is."""
    from pagemind.answering.signals import FLAGS, KINDS, NAMES, tied

    def closed(names: set[str]) -> set[str]:
        return names | {flag for flag in set(FLAGS.values()) if tied(flag) - {flag} <= names}

    everywhere: set[str] = set()
    apart: dict[str, set[str]] = {}
    for given in (n.strip() for n in without.split(",") if n.strip()):
        flag, _, name = given.rpartition(":")
        if name not in NAMES:
            sys.exit(f"no such signal: {name} (pagemind.answering.signals.NAMES)")
        (apart.setdefault(flag, set()) if flag else everywhere).add(name)
    needs: dict[str, str] = {}
    for given in needing:
        which, _, wanted = given.rpartition(":")
        if wanted not in FLAGS.values() or which not in ("", *KINDS):
            sys.exit(f"--needing takes FLAG or KIND:FLAG, a kind of {', '.join(KINDS)} and a has_* flag: "
                     f"{', '.join(sorted(set(FLAGS.values())))}")
        if which in needs:
            sys.exit(f"--needing names {which or 'every kind'} twice: {needs[which]} and {wanted}")
        needs[which] = wanted
    if stray := set(apart) - set(needs.values()):
        sys.exit(f"--without FLAG:NAME names a flag no --needing gives: {', '.join(sorted(stray))}")
    return closed(everywhere), {flag: closed(names) for flag, names in apart.items()}, needs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--min", type=int, default=100, help="answers of a kind needed to ship its model of every "
                                                              "signal")
    parser.add_argument("--min-recalibrated", type=int, default=50,
                        help="answers of a kind needed to ship its hand-set confidence recalibrated (two numbers)")
    parser.add_argument("--without", default="", help="signals left out of every fit, comma-separated; FLAG:NAME "
                                                      "leaves NAME out of the --needing FLAG model only")
    parser.add_argument("--needing", action="append", default=[],
                        help="a call's has_* flag, FLAG or KIND:FLAG (repeatable): a second model of each kind (or of "
                             "KIND) for the answers with it")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    from pagemind.answering.calibration import FILE, fit
    from pagemind.answering.signals import DIRECTION, NAMES, seen, tied
    from pagemind.eval.report import abstain_below

    without, apart, needing = chosen(args.without, args.needing)
    rows = load(args.runs)
    if not rows:
        sys.exit("no answer with signals in those runs (runs made before signals were recorded have none)")
    # the hand-set value is the baseline, not an input; the call's signals are the second model's
    every = tuple(n for n in NAMES if n != "support_confidence" and n not in without)
    report: dict = {"runs": sorted({r["run"] for r in rows}), "answers": len(rows), "without": sorted(without),
                    "without_apart": {flag: sorted(names) for flag, names in apart.items()}, "kinds": {}}
    models = []
    for kind in sorted({r["kind"] for r in rows}):
        mine = [r for r in rows if r["kind"] == kind]
        flag = needing.get(kind, needing.get(""))
        general = tuple(n for n in every if not flag or n not in tied(flag))
        documents = sorted({r["document"] for r in mine})
        folds = min(args.folds, len(documents))
        names, between = within_sets(mine, general)
        held = held_out(mine, folds, names, kind)
        rescaled = held_out(mine, folds, HAND, kind)
        hand = [float(r["signals"]["support_confidence"]) for r in mine]
        right = [r["right"] for r in mine]
        entry = {"documents": len(documents), "folds": folds, "left_out": between, "fitted": measures(held, right),
                 "hand_set": measures(hand, right), "thresholds": {"fitted": thresholds(held, right),
                                                                   "hand_set": thresholds(hand, right)},
                 "by_dataset": by_dataset(mine, right, fitted=held, hand_set=hand, recalibrated=rescaled)}
        entry["recalibrated"] = measures(rescaled, right)
        # each signal alone, as it ranks the answers (no fit): what a signal says before the others are beside it,
        # read the way it may move the confidence (one that may only lower it, negated; a flag or a count as it is)
        entry["alone"] = {n: measures([(-1.0 if DIRECTION.get(n) == -1 else 1.0) * seen(r["signals"], n)
                                       for r in mine], right)["auroc"] for n in names}
        entry["flagged"] = {"fitted": flagged(held, right), "hand_set": flagged(hand, right)}
        for dataset, one in entry["by_dataset"].items():
            idx = [i for i, r in enumerate(mine) if r["dataset"] == dataset]
            one["flagged"] = flagged([held[i] for i in idx], [right[i] for i in idx])
        variant = [r["variant"] for r in mine]
        if any(variant):  # unanswerable variants among them: what an abstention set for 10% lost right ones catches
            rule = [ruled(r) for r in mine]
            entry["variants"] = {"fitted": on_variants(held, right, variant, rule),
                                 "hand_set": on_variants(hand, right, variant, rule)}
        # the model of every signal where it ranks better held out and there are --min answers to fit it on
        better = (entry["fitted"]["auroc"] or 0) > (entry["hand_set"]["auroc"] or 0) and len(mine) >= args.min
        graded = sorted({r["dataset"] for r in mine if r["graded"]})
        source = answers_of(mine) + (f" ({', '.join(graded)} graded by hand)" if graded else "")
        # else the hand-set value recalibrated: one increasing map of it, so in use it ranks answers exactly as that
        # value does (its held-out AUROC above pools five folds' maps, so it differs a little); two numbers to fit,
        # it ships from --min-recalibrated answers where its held-out ECE is lower and its weight positive
        entry["l2"] = penalty(mine, folds, names if better else HAND, kind)  # the shipped fit's, chosen held out
        rescale = None if better or len({*right}) < 2 else fit(
            [r["signals"] for r in mine], right, HAND, kind,
            source=f"{source}; the hand-set confidence recalibrated; L2 {entry['l2']:g}", l2=entry["l2"])
        ece, hand_ece = entry["recalibrated"]["ece"], entry["hand_set"]["ece"]
        calibrates = rescale is not None and rescale.weights[0] > 0 and ece is not None and hand_ece is not None \
            and ece < hand_ece and len(mine) >= args.min_recalibrated
        entry["ships"] = "fitted" if better else "recalibrated" if calibrates else "hand_set"
        entry["shipped"] = bool(args.write and folds >= 2 and (better or calibrates))
        shipped_held = held if better else rescaled if calibrates else hand  # what ships, held out
        entry["abstain_below"] = {str(t): abstain_below(shipped_held, right, t) for t in TARGETS}
        entry["abstain_at"] = {t: withheld(shipped_held, right, b) for t, b in entry["abstain_below"].items()
                               if b is not None}
        entry["curve"] = curve(shipped_held, right)
        if entry["shipped"]:
            whole = fit([r["signals"] for r in mine], right, names, kind, source=f"{source}; L2 {entry['l2']:g}",
                        l2=entry["l2"]) if better else rescale
            assert whole is not None  # shipped without a better model: the recalibration that calibrates
            entry["model"] = ship(whole, entry["abstain_below"], models)
        if flag:
            own = tuple(n for n in every if n not in apart.get(flag, ()))
            entry["needing"] = special(args, mine, held, kind, flag, own, models)
        report["kinds"][kind] = entry
        shown = ("documents", "left_out", "fitted", "hand_set", "recalibrated", "alone", "thresholds", "abstain_below",
                 "ships", "l2", "shipped", "variants", "flagged")
        print(kind, json.dumps({k: entry[k] for k in shown if k in entry}),
              flush=True)
    if args.write:
        path = ROOT / "src" / "pagemind" / "answering" / FILE
        about = json.loads(path.read_text())["about"] if path.exists() else ""
        path.write_text(json.dumps({"about": about, "models": models}, indent=2) + "\n")
        print(f"wrote {len(models)} model(s) to {path.relative_to(ROOT)}")
    write_result("calibration", report)


if __name__ == "__main__":
    main()
