"""A confidence fitted on labelled answers (issue 51): one logistic model per kind of question (multiple choice, a
figure, free form) over the answer's signals (:mod:`pagemind.answering.signals`), its coefficients package data
(``answering/calibration.json``) written by ``benchmarks/calibrate.py`` from evaluated runs, folds by document.

Where the file holds a model for an answer's kind, :attr:`Answer.confidence` is that model's probability that the
answer is right; where it holds none, the support check's hand-set combination stands (and says so:
``Answer.calibrated`` is None). Nothing is fitted at answer time: reading the coefficients is one small JSON file.

A kind may ship a second model for answers that carry an opt-in call's signal (``needs``: its ``has_*`` flags, e.g.
``has_reordered``), fitted on the labelled answers that had it; an answer with those flags set is read by it, any
other by its kind's model, fitted without those signals (:func:`model_for`). Fitted on a few hundred answers, such a
model may read the kind's model's verdict instead of every signal again: its input :data:`BASE` is the logit the
kind's model gives the answer, beside the call's own signals (``agreement``) — two or three weights, not thirty.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from .signals import DIRECTION, FLAGS, KINDS, Kind, seen

FILE = "calibration.json"
L2 = 1.0  # ridge penalty on the standardised weights (benchmarks/calibrate.py chooses each shipped fit's held out)
NEWTON_STEPS = 50
BASE = "base"  # a model's input that is its kind's model's logit for the answer (read over that model: ``over``)


@dataclass(frozen=True)
class Fitted:
    """One kind's logistic model: ``P(right) = sigmoid(bias + sum(weights * (signal - mean) / scale))``."""

    kind: Kind
    names: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    n: int  # the labelled answers it was fitted on
    source: str = ""  # which runs (datasets, model) it was fitted on
    # (share wrong, threshold) read off the held-out answers: below the threshold at least that share were wrong
    below: tuple[tuple[float, float], ...] = ()
    needs: tuple[str, ...] = ()  # the flags an answer must have set to be read by it (none: its kind's model)
    over: Fitted | None = None  # the model whose logit it reads as BASE (set where the shipped file is read)

    def threshold(self, precision: float) -> float | None:
        """The confidence below which an answer is withheld for an abstention ``precision`` (the share of withheld
        answers that were wrong on held-out documents): the threshold measured for the least target at or above
        it; None when no threshold reached it (nothing is withheld on the confidence)."""
        reached = [(target, at) for target, at in self.below if target >= precision - 1e-9]
        return min(reached)[1] if reached else None

    def probability(self, signals: Mapping[str, float]) -> float:
        """``P(right)`` of an answer's ``signals``. A signal the answer lacks (its ``has_*`` flag 0: no
        log-probabilities from this backend, no verifier) that every labelled answer had counts as its mean there:
        the model never saw it missing, and its 0 would read as the highest log-probability or the lowest."""
        return 1.0 / (1.0 + math.exp(-self.logit(signals)))

    def logit(self, signals: Mapping[str, float]) -> float:
        """The log-odds of right (:meth:`probability`'s), within ±60; a model read over another (``over``) reads
        that one's as :data:`BASE`."""
        if self.over is not None:
            signals = {**signals, BASE: self.over.logit(signals)}
        means = dict(zip(self.names, self.mean))

        def value(name: str, mean: float) -> float:
            flag = FLAGS.get(name)
            if flag is not None and float(signals.get(flag, 1.0)) == 0.0 and means.get(flag, 0.0) >= 1.0:
                return mean
            return seen(signals, name)

        z = self.bias + sum(w * (value(name, m) - m) / s
                            for name, w, m, s in zip(self.names, self.weights, self.mean, self.scale))
        return max(-60.0, min(60.0, z))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names), "weights": [round(w, 6) for w in self.weights],
                "bias": round(self.bias, 6), "mean": [round(m, 6) for m in self.mean],
                "scale": [round(s, 6) for s in self.scale], "n": self.n, "source": self.source,
                "abstain_below": [[round(t, 4), round(b, 4)] for t, b in self.below],
                **({"needs": list(self.needs)} if self.needs else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fitted:
        kind = data["kind"]
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        names = tuple(str(n) for n in data["names"])
        columns = [tuple(float(x) for x in data[k]) for k in ("weights", "mean", "scale")]
        if any(len(c) != len(names) for c in columns):
            raise ValueError("weights, mean and scale must name every signal")
        below = tuple(sorted((float(t), float(b)) for t, b in data.get("abstain_below", ())))
        if any(not 0 < t < 1 or not 0 <= b <= 1 for t, b in below):
            raise ValueError("abstain_below pairs a share wrong in (0, 1) with a threshold in [0, 1]")
        needs = tuple(str(flag) for flag in data.get("needs", ()))
        if any(flag not in FLAGS.values() for flag in needs):
            raise ValueError(f"needs names a flag that is none: {', '.join(needs)}")
        return cls(kind, names, columns[0], float(data["bias"]), columns[1], columns[2], int(data["n"]),
                   str(data.get("source", "")), below, needs)


def fit(rows: Sequence[Mapping[str, float]], right: Sequence[bool], names: Sequence[str], kind: Kind,
        source: str = "", l2: float = L2) -> Fitted:
    """The logistic model of ``right`` on ``rows``' signals ``names`` (standardised; L2 ``l2``; Newton's method),
    each weight of the sign :data:`~pagemind.answering.signals.DIRECTION` allows: a signal whose unconstrained
    weight comes out the other way (the labels' noise: "supported" lowering the confidence) is left out and the
    rest fitted again, the worst first, until every weight goes its declared way."""
    import numpy as np

    x = np.array([[seen(r, n) for n in names] for r in rows], dtype=np.float64)
    y = np.array([1.0 if r else 0.0 for r in right])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a signal that never varies weighs nothing
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    sign = np.array([0.0] + [1.0 if n == BASE else float(DIRECTION.get(n, 0)) for n in names])
    kept = np.ones(len(sign), dtype=bool)
    while True:
        w = _newton(z, y, kept, l2)
        wrong = np.where(sign * w < -1e-12, -sign * w, 0.0)
        if not wrong.any():
            break
        kept[int(wrong.argmax())] = False  # the signal furthest the wrong way weighs nothing
    return Fitted(kind, tuple(names), tuple(float(v) for v in w[1:]), float(w[0]), tuple(float(v) for v in mean),
                  tuple(float(v) for v in scale), len(rows), source)


def _newton(z: Any, y: Any, kept: Any, l2: float) -> Any:
    """Ridge logistic regression on the columns ``kept`` of ``z`` (its first, the bias, never shrunk); the other
    weights 0."""
    import numpy as np

    cols = np.flatnonzero(kept)
    zk = z[:, cols]
    w = np.zeros(len(cols))
    penalty = np.diag([0.0 if c == 0 else l2 for c in cols])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(zk @ w, -60, 60)))
        gradient = zk.T @ (p - y) + penalty @ w
        hessian = zk.T @ (zk * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    out = np.zeros(z.shape[1])
    out[cols] = w
    return out


@cache
def shipped() -> tuple[Fitted, ...]:
    """Every shipped model, as the file lists them (none where it is missing)."""
    try:
        text = resources.files("pagemind.answering").joinpath(FILE).read_text("utf-8")
    except (FileNotFoundError, OSError):
        return ()
    return joined(tuple(Fitted.from_dict(m) for m in json.loads(text).get("models", [])))


def joined(models: tuple[Fitted, ...]) -> tuple[Fitted, ...]:
    """``models`` with each one that reads :data:`BASE` given its kind's model (the one that needs no flag) to read
    it over; a file with such a model and none of its kind to read over is refused."""
    general = _of_each_kind(models)
    out = []
    for m in models:
        if BASE in m.names:
            if not m.needs or m.kind not in general:
                raise ValueError(f"a {m.kind} model reads {BASE!r} without a {m.kind} model that needs no flag")
            m = replace(m, over=general[m.kind])
        out.append(m)
    return tuple(out)


def fitted() -> dict[str, Fitted]:
    """Each kind's model, for an answer that carries no opt-in call's signal (none where the file holds none)."""
    return _of_each_kind(shipped())


def _of_each_kind(models: Sequence[Fitted]) -> dict[str, Fitted]:
    """Each kind's model among ``models``: the one that needs no flag."""
    return {m.kind: m for m in models if not m.needs}


def model_for(kind: str, signals: Mapping[str, float]) -> Fitted | None:
    """The model that reads an answer of ``kind`` with ``signals``: the one whose ``needs`` it has set (most needs
    first), else its kind's (None where none is shipped)."""
    mine = sorted((m for m in shipped() if m.kind == kind), key=lambda m: -len(m.needs))
    return next((m for m in mine if all(float(signals.get(flag, 0.0)) == 1.0 for flag in m.needs)), None)


__all__ = ["BASE", "FILE", "Fitted", "fit", "fitted", "joined", "model_for", "shipped"]
