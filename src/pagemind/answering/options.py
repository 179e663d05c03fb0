"""What every answer is finished with, declared once: citations, support, abstention and the verifier.

:class:`AnswerOptions` is the part of every method's options that :func:`pagemind.answering.finish.finish` reads;
a method's :class:`~pagemind.methods.options.ReaderOptions` extends it, so these are every method's options (listed
after its own) and reach the CLI flags, the HTTP and MCP schemas and ``pagemind eval -O`` from this one declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from ..declare import Options, option
from ..llm.decide import MAX_RETRIES

MAX_SAMPLES = 8  # sampled replies an answer may ask for (pagemind.methods.reply.sampled)


@dataclass(frozen=True)
class AnswerOptions(Options):
    """How an answer is finished after the model's reply; the re-asks and reply formats of its own calls (quotes,
    the verifier) are the method's (``constrained``, ``max_retries``)."""

    cite: Literal["sentences", "quotes", "off"] = option(
        "sentences", "citations: the read sentences that best match the answer (no LLM call), quotes the model "
                     "gives and pagemind checks against the text (one more call), or none")
    cite_encoder: Literal["auto", "lexical", "minilm"] = option(
        "auto", "how the read sentences citing an answer are ranked: by their words (lexical), re-ranked by the "
                "embedded MiniLM encoder (minilm: the retrieval extra), or auto: minilm where the reader embeds "
                "anyway (dense or hybrid RAG, FragRel's semantic relation), else lexical; the answer records which")
    support: Literal["auto", "lexical", "minilm", "off"] = option(
        "auto", "how each answer's support by its citations is judged, with no LLM call: by the claims' words, "
                "numbers and names found in the cited text (lexical), also by their similarity to it under the "
                "embedded MiniLM encoder (minilm: the retrieval extra), auto: as the citations are ranked "
                "(cite_encoder), or not at all (off)")
    compute: Literal["auto", "off"] = option(
        "auto", "a question asking for a computed figure (a ratio, margin, turnover, growth, \"calculate ...\") gets "
                "one more short call: the model names the figures it takes from what it read and the formula, "
                "pagemind checks each figure is in the text and does the arithmetic, and the answer shows the "
                "working (auto); off: the model's own figure")
    prior: Literal["auto", "on", "off"] = option(
        "auto", "a multiple-choice answer gets one more short call where the backend returns log-probabilities: the "
                "question and its options with no text, so the chosen option's probability unread is recorded "
                "beside its probability read (probability.prior) and the fitted confidence reads how far the text "
                "moved the model to it (auto; not where the reordered call returned a share and the model fitted "
                "for those answers does not read the lift); on: wherever it can (labelled runs that record both); "
                "off: no call")
    reorder: Literal["auto", "off"] = option(
        "auto", "a multiple-choice answer gets one more short call where the backend returns log-probabilities: the "
                "same prompt with the options listed in reverse order, so the chosen option's share then is recorded "
                "(probability.reordered) and the fitted confidence reads whether the pick held when the options "
                "moved (auto; a prompt cache skips the text before the options: llama.cpp, vLLM, SGLang; pagemind "
                "eval asks it only with -O METHOD:reorder=auto); off: no call")
    samples: int = option(
        0, "a free-form answer's prompt sent this many times more, sampled (temperature 0.8, seeds 1..n): how far "
           "the replies agree with the answer is recorded (probability.agreement, a signal for a fitted confidence: "
           "a model that knows says it again, one that guesses wanders); short calls where a prompt cache skips the "
           "prompt just read (llama.cpp, vLLM, SGLang); 0: none", minimum=0, maximum=MAX_SAMPLES)
    verify: bool = option(
        False, "one more short call after the answer: the model reads only the cited sentences and labels the "
               "answer supported, partial or unsupported (constrained to those labels; the label's probability as "
               "confidence where the backend returns log-probabilities)")
    abstain: Literal["auto", "on", "off"] = option(
        "auto", "reply \"The document does not say ...\" with what was closest (the model's answer kept as the "
                "draft) when the answer is not supported by what was read: auto does so for free-form questions "
                "(not multiple choice, nor the papers' evaluation protocols), on for every question, off never")
    abstain_precision: float | None = option(
        None, "abstain by the fitted confidence instead of the support label: withhold an answer whose confidence is "
              "below the threshold under which at least this share of labelled answers (held out) were wrong, e.g. "
              "0.9; answers of a kind without a fitted model keep the support rule, and where no threshold reached "
              "the share only a reply that says the text does not hold the answer is withheld",
        above=0, below=1)
    constrained: bool = option(True, "enforce reply formats with a grammar where the backend can",
                               flag="--constrained/--unconstrained")
    max_retries: int = option(2, "re-asks after an unparsable reply, per decision", minimum=0, maximum=MAX_RETRIES)

    @classmethod
    def shared_names(cls) -> frozenset[str]:
        """Every method's options (these), listed after a method's own."""
        return frozenset(f.name for f in fields(AnswerOptions))


__all__ = ["AnswerOptions"]
