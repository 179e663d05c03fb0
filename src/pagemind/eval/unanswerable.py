"""Unanswerable variants: every labelled question asked again of its document with the evidence taken out.

``pagemind eval --unanswerable`` adds, for each example it runs, a variant whose document lacks what answers it, so
any set gains an abstention half (scored by :mod:`.report`: abstention precision and recall, false abstentions):

* examples with labelled evidence spans (QMSum's turns, LoCoMo's dialogue ids, BABILong's supporting facts) lose
  those spans;
* others lose every sentence that holds most of the answer: the gold option's text (QuALITY) or a reference answer
  (the long sample, NarrativeQA) — each sentence holding at least :data:`HOLDS` of the answer's content words, and
  every sentence holding a number or name of it;
* then, in both cases, what says it again in other words: every other sentence the support check judges to hold
  the answer to the question (QuALITY's restatements of the gold option), and — where the labelled evidence names
  whom the question asks about — every other sentence naming them (BABILong's earlier moves of the same person,
  from which an older answer could still be read);
* an example whose answer cannot be found that way (a summary, an answer of no content word) gets no variant, and
  the run's notes say how many.

The variant keeps the question (and options), is marked ``meta["unanswerable"]``, and has its own document id:
methods build a memory of the shortened text. Limits: what the support check cannot see (a restatement sharing
few words with the answer, an answer read from several sentences together) may still be there, so a few
"unanswerable" variants are answerable and an abstention there is counted as a miss — the figures are a floor, said
so in the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from .datasets import Example, short_hash

HOLDS = 0.6  # a sentence holding this share of the answer's content words is taken out
SUFFIX = "~unanswerable"
REFERENCE = "The document does not say."


def variant(example: Example) -> Example | None:
    """``example`` asked of its document without the evidence, or None when the evidence cannot be found."""
    text = example.document
    cuts = [(s.start, s.end) for s in example.evidence if 0 <= s.start < s.end <= len(text)]
    how = "labelled evidence"
    if not cuts:
        answer = _answer_text(example)
        cuts = _answer_sentences(text, answer) if answer else []
        how = "sentences holding the answer"
    cuts += _restatements(example, text, cuts)
    if not cuts:
        return None
    kept, at, removed = [], 0, 0
    for start, end in sorted(cuts):
        if start < at:  # overlapping spans
            start = at
        if start >= end:
            continue
        kept.append(text[at:start])
        removed += end - start
        at = end
        if at < len(text) and text[at] == " " and (start == 0 or text[start - 1].isspace()):
            at += 1  # "a. [cut] b." -> "a. b.", not "a.  b."
    kept.append(text[at:])
    shortened = "".join(kept)
    meta = {**dict(example.meta), "unanswerable": True, "removed_chars": removed, "removed": how,
            "answerable_id": example.id}
    ident = f"{example.document_id}{SUFFIX}-{short_hash(shortened)}"
    return replace(example, id=example.id + SUFFIX, document_id=ident,
                   document=shortened, references=(REFERENCE,), evidence=(), meta=meta,
                   passages=tuple(p for p in example.passages if p in shortened),  # the agent's archive loses it too
                   conversation=tuple(t for t in example.conversation if t.text in shortened))


def with_variants(examples: Sequence[Example]) -> tuple[list[Example], int]:
    """The examples, each followed by its unanswerable variant, and how many had none."""
    out: list[Example] = []
    missing = 0
    for e in examples:
        out.append(e)
        v = variant(e)
        if v is None:
            missing += 1
        else:
            out.append(v)
    return out, missing


def _answer_text(example: Example) -> str:
    if example.task == "choice" and example.gold is not None and example.gold < len(example.options):
        return example.options[example.gold]
    if example.task in ("qa", "kv", "open") and example.references:
        return min(example.references, key=len)
    return ""


def _restatements(example: Example, text: str, cuts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of the sentences outside ``cuts`` that say the evidence again: those the support check judges to hold
    the answer to the question, and, where the cut evidence names whom the question asks about, those naming them
    too."""
    from ..answering.support import anchors, assess
    from ..citations import Citation

    answer = _answer_text(example)
    # whom the question asks about, where the evidence names them ("Fred" of "Fred went to the bedroom.")
    subjects = [re.compile(rf"\b{re.escape(a)}\b") for a in anchors(example.question)
                if any(re.search(rf"\b{re.escape(a)}\b", text[start:end].lower()) for start, end in cuts)]
    out: list[tuple[int, int]] = []
    for sentence, span in _sentence_spans(text):
        if any(start < span[1] and span[0] < end for start, end in cuts):
            continue
        if any(s.search(sentence.lower()) for s in subjects):
            out.append(span)
            continue
        if answer:
            quoted = Citation("", "text", None, span[0], span[1], sentence, "text")
            if assess(example.question, answer, [quoted], [sentence]).label == "supported":
                out.append(span)
    return out


def _answer_sentences(text: str, answer: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text`` that hold the answer (see the module's rule)."""
    from ..answering.support import facts, names, numbers

    wanted = facts(answer)
    exact = numbers(answer) | names(answer)
    if not wanted:
        return []
    out: list[tuple[int, int]] = []
    for sentence, span in _sentence_spans(text):
        held = facts(sentence)
        if len(wanted & held) >= HOLDS * len(wanted) or (exact & held):
            out.append(span)
    return out


def _sentence_spans(text: str) -> Iterator[tuple[str, tuple[int, int]]]:
    """Each sentence of ``text`` found in it, in order, with its span."""
    from ..citations import locate
    from ..text.words import sentences

    at = 0
    for sentence in sentences(text):
        span = locate(text, sentence, at)
        if span is not None:
            at = span[1]
            yield sentence, span


__all__ = ["REFERENCE", "SUFFIX", "variant", "with_variants"]
