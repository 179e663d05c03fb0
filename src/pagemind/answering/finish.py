"""After the model's reply: citations, support, abstention and the verifier, in one place, one entry.

A reader's ``_answer`` returns a :class:`Reading` (the reply, the units read, the evidence it declares);
:func:`finish` turns it into the :class:`~pagemind.answering.question.Answer` every surface shows: the citations
(aligned sentences with no LLM call, or quotes the model gives and pagemind finds in the text), the support judgement
(:mod:`.support`, with the verifier's reading on request: :mod:`.verify`) and, when the cited text does not hold a
free-form answer, the abstention (the model's words kept as the draft). What it reads of the options is one typed
:class:`~pagemind.answering.options.AnswerOptions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..citations import Citation
from ..llm.client import LLM
from ..llm.usage import Trace
from .compute import Computation, Unworked
from .evidence import Evidence
from .options import AnswerOptions
from .probability import NONE, AnswerProbability
from .question import LETTERS, Answer, Question
from .support import Support

Progress = Callable[[str, int, int, str], None]  # (phase, done, total, unit); total 0: a phase without a count


@dataclass
class Context:
    """What ``_answer`` gets beside the memory: its trace and the list fallbacks are recorded in."""

    trace: Trace = field(default_factory=Trace)
    fallbacks: list[str] = field(default_factory=list)
    progress: Progress | None = None
    on_text: Callable[[str], None] | None = None  # the free-form answer as it is generated
    finish_reason: str = "stop"  # of the answer call ("length": cut at the asker's reply limit)
    probability: AnswerProbability = NONE  # the answer call's own probability (where the backend returns it)

    def fallback(self, text: str) -> None:
        self.fallbacks.append(text)

    def phase(self, name: str, done: int = 0, total: int = 0, unit: str = "") -> None:
        """Tell the progress display what the answer is doing (looking up, answering...)."""
        if self.progress is not None:
            self.progress(name, done, total, unit)


@dataclass
class Reading:
    """What ``_answer`` returns: the reply and what was placed in context to get it."""

    text: str
    choice: int | None
    read: list[int]  # the units read (pages, nodes' leaves, fragments)
    context_words: int  # the longest document-derived text placed in one prompt
    document_words: int
    details: dict[str, Any] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)  # the units read, as citations will name them

    def located(self, document: Any = None) -> list[Evidence]:
        """The units read that can be cited: each in its own text (``within``), or all of them in ``document``."""
        return [e for e in self.evidence if e.within is not None or document is not None]


def finish(question: Question, reading: Reading, options: AnswerOptions, llm: LLM, context: Context, *,
           method: str, unit: str, encoder: str, document: Any = None) -> Answer:
    """The answer to ``question`` from a reader's ``reading``: cited into ``document`` (or each evidence's own,
    ``within``), judged, and withheld as an abstention when ``options.abstain`` says so for an unsupported answer.
    ``method`` and ``unit`` name the reader and what it counts as read; ``encoder`` ranks the cited sentences
    (``minilm`` or ``lexical``: the reader's resolved ``cite_encoder``). The LLM calls (quotes, the verifier) go to
    ``context.trace``, fallbacks to ``context.fallbacks``."""
    from . import evidence as ev

    worked = computed(question, reading, options, llm, context, document)
    computation = worked if isinstance(worked, Computation) else None
    if computation is not None:  # the answer is the working's result; its figures are what support judges
        reading = replace(reading, text=computation.text())
    elif not question.is_choice and (restated := in_units(question, reading, document)) is not None:
        reading = replace(reading, text=restated)  # "302,578" asked in millions, printed in thousands: 302.58 million
    claims = None if computation is None else computation.claims()
    each = [] if claims is None else cite_each(question, reading, options, claims, encoder, context, document)
    citations = ev.distinct(each) if each else cite(question, reading, options, llm, context, encoder, document)
    change = None if computation is None else computation.change
    support = judge(question, reading, citations, options, llm, context, encoder, document, claims=claims,
                    periods=change.periods() if change is not None else "")
    if support is not None and computation is not None and each:  # the result stands on every figure, each in its row
        support = support.weakest().misplaced(computation.misplaced([c.quote if c else None for c in each]))
    if isinstance(worked, Unworked) and support is not None:  # a derived figure no working checked
        support = support.unchecked(worked.reason)
    answer = Answer(
        question=question, method=method, text=reading.text, choice=reading.choice, computation=computation,
        pages_read=list(reading.read), read_unit=unit,
        compression_rate=100.0 * (1 - reading.context_words / max(1, reading.document_words)),
        context_words=reading.context_words, trace=context.trace, fallbacks=list(context.fallbacks),
        details=reading.details, citations=citations, finish_reason=context.finish_reason, support=support,
        probability=context.probability,
    )
    if support is None:
        return answer
    from .calibration import model_for
    from .signals import kind_of, signals
    from .support import abstains, abstention

    kind = kind_of(answer)
    read = signals(answer)
    model = model_for(kind, read)  # a fitted confidence where one is shipped for the answer's kind (and its calls)
    if model is not None:
        answer.calibrated = round(model.probability(read), 4)
    below, because = None, ""
    if options.abstain_precision is not None:  # withheld by the fitted confidence, for a stated precision
        if model is None:
            answer.fallbacks.append(f"abstain_precision: no fitted confidence for {kind} answers; withheld where "
                                    "the support check finds the answer unsupported")
        else:
            at = model.threshold(options.abstain_precision)
            below = 0.0 if at is None else at  # no threshold reached the precision: none withheld on confidence
            if at is None:
                answer.fallbacks.append(f"abstain_precision: no confidence of {kind} answers had "
                                        f"{options.abstain_precision:.0%} of labelled answers below it wrong; none "
                                        "withheld on the confidence")
            if answer.calibrated is not None and answer.calibrated < below and not support.declined:
                digits = 2 if f"{answer.calibrated:.2f}" != f"{below:.2f}" else 4
                because = (f"confidence {answer.calibrated:.{digits}f}, below {below:.{digits}f}: on labelled "
                           f"answers at least {options.abstain_precision:.0%} of those below it were wrong")
    answer.would_abstain = abstains("on", False, support, below, answer.calibrated)
    if abstains(options.abstain, question.is_choice, support, below, answer.calibrated):
        answer.draft, answer.abstained = answer.text, True
        answer.text, answer.choice = abstention(support, citations, because), None
    return answer


def in_units(question: Question, reading: Reading, document: Any = None) -> str | None:
    """A bare figure answered, restated in the units the question asks for where the text read writes it under
    another scale (:func:`~pagemind.text.numbers.in_units_asked`: MGM's balance sheet in thousands, the question in
    millions); None otherwise."""
    from ..text.numbers import in_units_asked

    text = getattr(document, "text", None)
    if not isinstance(text, str):
        text = "\n".join(e.head + e.text for e in reading.evidence)
    return in_units_asked(reading.text, question.text, text)


def computed(question: Question, reading: Reading, options: AnswerOptions, llm: LLM, context: Context,
             document: Any = None) -> Computation | Unworked | None:
    """The working of a computed figure (:mod:`.compute`) where ``options.compute`` is on and the question asks for
    one, worked out from the units the reading declares; None otherwise (also when the asker's reply settings ask
    for JSON or a token limit, or the reader's reply says the text does not hold the answer) or when no reply gives
    a working."""
    from . import compute

    settings = question.reply
    if settings is not None and (settings.json_schema is not None or settings.max_tokens is not None):
        return None  # the asker wants the reply as JSON, or this short: a working would break either
    if options.compute == "off" or question.is_choice or not compute.asked(question.text):
        return None
    from .support import declined

    if declined(reading.text):  # the reader found no answer: a working would put a figure in its place
        return None
    located = reading.located(document)
    if not located:
        return None
    return compute.work_out(question, located, reading.text, options, llm, context)


def judge(question: Question, reading: Reading, citations: list[Citation], options: AnswerOptions, llm: LLM,
          context: Context, encoder: str, document: Any = None, claims: Sequence[str] | None = None,
          periods: str = "") -> Support | None:
    """How well the citations support the answer (:mod:`.support`; no LLM call), with the verifier's reading when
    ``options.verify`` asks for it; ``claims``: what is judged when not the reply (a computed answer's figures, each
    a claim); ``periods``: the periods it is asked about beside the question's (a change's two years).
    None (not judged) with ``support=off``, without citations by choice
    (``cite=off``), for a reader that declares nothing it read, or when no option was chosen. A free-form reply that
    declines ("no answer") with nothing read is judged: the abstention it is."""
    from ..text import Document
    from . import evidence as ev
    from .support import assess, declined, unwritten

    mode = options.support
    whole = document.text if isinstance(document, Document) else None  # a library's citations point into its members
    if mode != "off" and not reading.evidence and not question.is_choice and declined(reading.text):
        return Support("unsupported", 0.0, declined=True, reason="the method found no answer in what it read",
                       unwritten=unwritten(question.text, whole))
    if (mode == "off" or options.cite == "off" or not reading.evidence
            or (question.is_choice and reading.choice is None)):
        return None
    wanted = mode == "minilm" or (mode == "auto" and encoder == "minilm")
    embedder = ev.minilm_encoder() if wanted else None
    if wanted and embedder is None:
        context.fallback("support minilm: the embedded encoder is not installed (the retrieval extra); support "
                         "judged by words alone")
    read = [e.text for e in reading.evidence]
    support = assess(question, " ".join(claims) if claims else reading.text, citations, read, embedder, whole,
                     given=claims or None, periods=periods)
    if question.is_choice and reading.choice is not None:  # the other options, cited as the chosen one is
        located = reading.located(document)
        rivals = [(LETTERS[i], assess(question, option, ev.supporting(document, located, option, question.text,
                                                                      embedder=embedder), read, embedder, whole,
                                        later=False))
                  for i, option in enumerate(question.options) if i != reading.choice]
        letter, best = max(rivals, key=lambda r: r[1].confidence)
        support = support.against(letter, best.confidence)
    if options.verify:
        from .verify import verify

        verdict = verify(llm, question, reading.text, citations, context.trace, retries=1)
        if verdict.label is None:
            context.fallback(f"verify: no label from the verifier ({verdict.problem}); the support stands on "
                             "the words of the cited text alone")
        support = support.with_verdict(verdict)
    return support


def cite(question: Question, reading: Reading, options: AnswerOptions, llm: LLM, context: Context, encoder: str,
         document: Any = None) -> list[Citation]:
    """The citations of an answer, from the evidence its reading declares, in the mode of ``options.cite``:
    aligned sentences (no LLM call), checked quotes (one call), or none."""
    from . import evidence as ev

    if options.cite == "off" or not reading.evidence or (question.is_choice and reading.choice is None):
        return []
    located = reading.located(document)
    if not located:
        return []
    if options.cite == "quotes":
        quoted = quotes(question, reading, located, options, llm, context, document)
        if quoted:
            return quoted
        context.fallback("no quoted sentence was found in the text: citing the read sentences that best "
                         "match the answer instead")
    return ev.supporting(document, located, reading.text, question.text, embedder=_encoder(reading, encoder, context))


def cite_each(question: Question, reading: Reading, options: AnswerOptions, claims: Sequence[str], encoder: str,
              context: Context, document: Any = None) -> list[Citation | None]:
    """The citation of each of ``claims`` — a computed answer's figures, each aligned to its own sentence or row (in
    every cite mode but off: a working's figures are the text's own, not the model's to quote) — None where none is
    found; no citations (an empty list) where the answer is not cited."""
    from . import evidence as ev

    located = reading.located(document)
    if options.cite == "off" or not located:
        return []
    return ev.supporting_each(document, located, claims, question.text, embedder=_encoder(reading, encoder, context))


def _encoder(reading: Reading, encoder: str, context: Context) -> Any:
    """The encoder aligned citations are ranked with (MiniLM where asked and installed, else None: words)."""
    from . import evidence as ev

    embedder = ev.minilm_encoder() if encoder == "minilm" else None
    reading.details["cite_encoder"] = "minilm" if embedder is not None else "lexical"
    if encoder == "minilm" and embedder is None:
        context.fallback("cite_encoder minilm: the embedded encoder is not installed (the retrieval extra); "
                         "citations ranked by their words")
    return embedder


def quotes(question: Question, reading: Reading, located: list[Evidence], options: AnswerOptions, llm: LLM,
           context: Context, document: Any = None) -> list[Citation]:
    """Ask the model to quote what its answer rests on; keep the quotes found in the text, record the others."""
    from ..llm.decide import Invalid, decide
    from . import evidence as ev

    caps = llm.backend.capabilities
    constrained = options.constrained and (caps.supports_grammar or caps.supports_json_schema)
    fitted = ev.fitting(located, llm, lambda units: ev.quote_request(units, question, reading.text, constrained))
    if fitted is None:
        context.fallback("quoted evidence: what was read does not fit the window beside the request")
        return []
    shown, request = fitted

    def parse(reply: str) -> list[str] | Invalid:
        found = ev.parse_quotes(reply)
        return Invalid(found) if isinstance(found, str) else found

    context.phase("quoting the evidence")
    decision = decide(llm, request, parse, context.trace, retries=options.max_retries,
                      describe=lambda quoted: f"{len(quoted)} quote(s)")
    if decision.value is None:
        context.fallback(f"quoted evidence: no quotes could be read after {decision.calls} replies "
                         f"({'; '.join(decision.problems)[:120]})")
        return []
    out: list[Citation] = []
    for quote in decision.value:
        if len(quote.split()) < ev.MIN_QUOTE_WORDS:
            context.fallback(f"quote too short to check, dropped: {quote[:80]!r}")
            continue
        found = ev.placed(document, shown, quote)
        if found is None:
            context.fallback(f"quote not in the text, dropped: {quote[:80]!r}")
        elif not any(c.document == found.document and c.start == found.start for c in out):
            out.append(found)
    return out


__all__ = ["Context", "Progress", "Reading", "cite", "computed", "finish", "judge", "quotes"]
