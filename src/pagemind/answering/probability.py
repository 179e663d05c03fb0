"""The answer's own probability, as the model gave it: no extra call.

Where the backend returns log-probabilities (llama.cpp's server, vLLM, SGLang, OpenAI: ``Capabilities.
supports_logprobs``), the answer call asks for them with a few alternatives per token. A multiple-choice answer's
probability is the chosen option's share of the probability mass the options' letters get at the token where the
letter stands (beside the next most probable option's: the ``margin``); a free-form answer's is its tokens' mean and
minimum log-probability. A backend without them leaves ``basis="none"``: the answer says so rather than showing a
number it does not have.

A multiple-choice answer's ``prior`` is the same option's share when the question and its options are asked with no
text (one short call: :func:`pagemind.methods.reply.prior`). An option the model would pick without reading is a
guess however sure it looks; ``lift``, how far the text moved the model to it, is what the fitted confidence reads
(on the labelled QuALITY answers AUROC 0.60 for the probability alone, 0.68 for the lift; on MSC's 0.90 and 0.98).
Its ``reordered`` is the same option's share when the same prompt lists the options in reverse order (one more short
call, its text a prefix the backend has just read: :func:`pagemind.methods.reply.reordered`): a small model's pick
that follows a position ("(A)", the last option) rather than the option moves with the order.

A free-form answer's ``agreement`` (opt-in, ``samples``: :func:`pagemind.methods.reply.sampled`) is how far that many
more replies to the same prompt, sampled at a temperature, say what the answer says: a model that knows gives the same
answer again, one that guesses wanders (alone, AUROC 0.760 on 56 LoCoMo answers against 0.667 for the fitted
confidence; 0.553 on 60 BABILong ones, whose wrong room the model names each time: ``benchmarks/README.md`` (az)).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..llm.base import Capabilities, LLMRequest, LLMResponse
from ..text.words import VERDICT, overlap_f1, polar

TOP = 5  # alternatives per token asked for (the options' letters are among them when the model weighs them)


@dataclass(frozen=True)
class AnswerProbability:
    """How probable the model found its own answer."""

    basis: Literal["choice", "tokens", "none"]
    choice: float | None = None  # multiple choice: the chosen option's share among the options' letters
    mean_logprob: float | None = None  # free form: the answer tokens' mean log-probability
    min_logprob: float | None = None  # and the least probable one's
    tokens: int = 0
    prior: float | None = None  # multiple choice: the same option's share asked with no text (None: not asked)
    runner_up: float | None = None  # multiple choice: the most probable other option's share, read
    reordered: float | None = None  # multiple choice: the same option's share, the options asked in reverse order
    agreement: float | None = None  # free form: how far sampled replies to the same prompt agree with it (0..1)
    sampled: tuple[str, ...] = ()  # free form: what the sampled replies said, in seed order
    # free form: the model's reply the samples were read against — the answer may be rewritten after (a figure
    # computed by pagemind, an abstention), so an evaluation can read every agreement anew from the record
    against: str = ""

    @property
    def value(self) -> float | None:
        """One number in 0..1: the choice's share, or the geometric mean of the tokens' probabilities."""
        if self.choice is not None:
            return self.choice
        return None if self.mean_logprob is None else math.exp(self.mean_logprob)

    @property
    def samples(self) -> int:
        """How many replies were sampled."""
        return len(self.sampled)

    @property
    def lift(self) -> float | None:
        """How far the text moved the model to the chosen option: its share read minus its share unread."""
        return None if self.choice is None or self.prior is None else self.choice - self.prior

    @property
    def margin(self) -> float | None:
        """How far the chosen option led the next most probable one, read (a narrow lead is a coin toss however
        high the share: two options sharing the mass)."""
        return None if self.choice is None or self.runner_up is None else self.choice - self.runner_up

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"basis": self.basis, "value": None if self.value is None else round(self.value, 4)}
        if self.basis == "choice":
            out["choice"] = None if self.choice is None else round(self.choice, 4)
            if self.runner_up is not None:
                out["runner_up"] = round(self.runner_up, 4)
            if self.prior is not None:
                out["prior"] = round(self.prior, 4)
            if self.reordered is not None:
                out["reordered"] = round(self.reordered, 4)
        elif self.basis == "tokens":
            out.update(mean_logprob=round(self.mean_logprob or 0.0, 4), min_logprob=round(self.min_logprob or 0.0, 4),
                       tokens=self.tokens)
        if self.agreement is not None:  # whatever the backend says of log-probabilities: the replies' words
            out.update(agreement=round(self.agreement, 4), samples=self.samples, sampled=list(self.sampled),
                       against=self.against)
        return out


NONE = AnswerProbability("none")


def asking_probability(request: LLMRequest, capabilities: Capabilities) -> LLMRequest:
    """``request`` asking for its reply's log-probabilities (:data:`TOP` alternatives a token) where the backend
    gives them and the request does not ask already: the answer's own probability, at no extra call."""
    if capabilities.supports_logprobs and not request.logprobs:
        return replace(request, logprobs=TOP)
    return request


def of_tokens(response: LLMResponse | None) -> AnswerProbability:
    """A free-form reply's probability: its tokens' mean and minimum log-probability (none without them)."""
    if response is None or not response.logprobs:
        return NONE
    values = [t.logprob for t in response.logprobs if t.token.strip()]
    if not values:
        return NONE
    return AnswerProbability("tokens", mean_logprob=sum(values) / len(values), min_logprob=min(values),
                             tokens=len(values))


def letter_shares(response: LLMResponse | None, letters: str | tuple[str, ...],
                  at: str | None = None) -> dict[str, float] | None:
    """Each option letter's share of the mass the letters get at the first reply token that names letter ``at``
    (any of ``letters`` when None: ``(B``, ``B``) and has it among its alternatives; None without log-probabilities
    or such a token."""
    if response is None or not response.logprobs:
        return None
    for token in response.logprobs:
        mass: dict[str, float] = {}
        for text, logprob in token.top or ((token.token, token.logprob),):
            named = _letter(text)
            if named in tuple(letters):  # one option's letter ("(", "AB" or "" are none)
                mass[named] = mass.get(named, 0.0) + math.exp(logprob)
        named = _letter(token.token)
        if named in mass and (at is None or named == at):
            total = sum(mass.values())
            return {letter: value / total for letter, value in mass.items()}
    return None


def of_choice(response: LLMResponse | None, letters: str | tuple[str, ...], chosen: int) -> AnswerProbability:
    """The chosen option's share of the mass the options' letters get at the reply token that names it, and the
    most probable other option's (``runner_up``; 0 where no other letter is among the alternatives); none without
    log-probabilities or when that token cannot be found."""
    shares = letter_shares(response, letters, at=letters[chosen])
    if shares is None:
        return NONE
    others = [share for letter, share in shares.items() if letter != letters[chosen]]
    return AnswerProbability("choice", choice=shares[letters[chosen]], runner_up=max(others, default=0.0), tokens=1)


def agreement(question: str, said: str, replies: Sequence[str]) -> float | None:
    """How far ``replies`` say what ``said`` says, 0..1, the mean over the replies: to a yes/no ``question`` answered
    yes or no, a reply with a verdict agrees by it (1 or 0, whatever else it says), one without by its word overlap
    with what the answer says after its verdict ("Best Buy's margins are consistent" for "Yes, Best Buy's margins have
    been consistent": the same claim, no verdict; nothing after a bare "Yes." to agree with); else each reply's word
    overlap with the answer (token F1 of their lowercase words, as measured: a sampled sentence around the same short
    answer scores below 1). None for no replies or no word said."""
    words = words_of(said)
    if not replies or not words:
        return None
    verdict = VERDICT.match(said) if polar(question) else None
    if verdict is None:
        return sum(overlap_f1(words, words_of(r)) for r in replies) / len(replies)
    claim = words_of(said[verdict.end():])

    def agrees(reply: str) -> float:
        given = VERDICT.match(reply)
        if given is not None:
            return float(given.group(1).lower() == verdict.group(1).lower())
        return overlap_f1(claim, words_of(reply)) if claim else 0.0

    return sum(agrees(r) for r in replies) / len(replies)


def words_of(text: str) -> list[str]:
    """``text``'s lowercase words (letters and digits of any script)."""
    return re.findall(r"[^\W_]+", text.lower())


def _letter(text: str) -> str:
    return text.strip().lstrip("(").rstrip(")").strip()


__all__ = ["NONE", "TOP", "AnswerProbability", "agreement", "asking_probability", "letter_shares", "of_choice",
           "of_tokens", "words_of"]
