"""The answer's own probability, as the model gave it: no extra call.

Where the backend returns log-probabilities (llama.cpp's server, vLLM, SGLang, OpenAI: ``Capabilities.
supports_logprobs``), the answer call asks for them with a few alternatives per token. A multiple-choice answer's
probability is the chosen option's share of the probability mass the options' letters get at the token where the
letter stands; a free-form answer's is its tokens' mean and minimum log-probability. A backend without them leaves
``basis="none"``: the answer says so rather than showing a number it does not have.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ..llm.base import LLMResponse

TOP = 5  # alternatives per token asked for (the options' letters are among them when the model weighs them)


@dataclass(frozen=True)
class AnswerProbability:
    """How probable the model found its own answer."""

    basis: Literal["choice", "tokens", "none"]
    choice: float | None = None  # multiple choice: the chosen option's share among the options' letters
    mean_logprob: float | None = None  # free form: the answer tokens' mean log-probability
    min_logprob: float | None = None  # and the least probable one's
    tokens: int = 0

    @property
    def value(self) -> float | None:
        """One number in 0..1: the choice's share, or the geometric mean of the tokens' probabilities."""
        if self.choice is not None:
            return self.choice
        return None if self.mean_logprob is None else math.exp(self.mean_logprob)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis, "value": None if self.value is None else round(self.value, 4)}
        if self.basis == "choice":
            out["choice"] = None if self.choice is None else round(self.choice, 4)
        elif self.basis == "tokens":
            out.update(mean_logprob=round(self.mean_logprob or 0.0, 4), min_logprob=round(self.min_logprob or 0.0, 4),
                       tokens=self.tokens)
        return out


NONE = AnswerProbability("none")


def of_tokens(response: LLMResponse | None) -> AnswerProbability:
    """A free-form reply's probability: its tokens' mean and minimum log-probability (none without them)."""
    if response is None or not response.logprobs:
        return NONE
    values = [t.logprob for t in response.logprobs if t.token.strip()]
    if not values:
        return NONE
    return AnswerProbability("tokens", mean_logprob=sum(values) / len(values), min_logprob=min(values),
                             tokens=len(values))


def of_choice(response: LLMResponse | None, letters: str | tuple[str, ...], chosen: int) -> AnswerProbability:
    """The chosen option's share of the mass the options' letters get at the reply token that names it (``(B``,
    ``B``); none without log-probabilities or when that token cannot be found."""
    if response is None or not response.logprobs:
        return NONE
    letter = letters[chosen]
    for token in response.logprobs:
        mass: dict[str, float] = {}
        for text, logprob in token.top or ((token.token, token.logprob),):
            named = text.strip().lstrip("(").rstrip(")").strip()
            if named in letters:
                mass[named] = mass.get(named, 0.0) + math.exp(logprob)
        if letter in mass and token.token.strip().lstrip("(").rstrip(")").strip() == letter:
            return AnswerProbability("choice", choice=mass[letter] / sum(mass.values()), tokens=1)
    return NONE


__all__ = ["NONE", "TOP", "AnswerProbability", "of_choice", "of_tokens"]
