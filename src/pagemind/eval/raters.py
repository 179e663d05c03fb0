"""LLM raters: ReadAgent's strict and permissive raters (LR-1, LR-2), and the judges of LongMemEval, MTBench+
and MMLongBench-Doc-V2 (the one PageIndex-OSS-Benchmark is scored with).

Both ReadAgent prompts go to every response and every reference (``prompts/raters.yaml``). A reference is
an exact match if either rater says so, a partial match if the strict rater is negative and the permissive one
says "Yes, partially"; the best rating over the references counts. Replies are parsed tolerantly
(``**YES**``, ``No, because ...``, ``yes, partially.``), re-asked at most ``max_retries`` times with a format
reminder, and enforced with a grammar where the backend can; a reply that still names no rating counts as no
match and is recorded as a fallback, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..llm.base import Constraint, LLMRequest, Message
from ..llm.client import LLM
from ..llm.usage import Trace
from ..prompts import get_prompt

RANK = {"none": 0, "partial": 1, "exact": 2}
_WORD = re.compile(r"\b(yes\W{0,3}partially|partially|yes|no)\b")
_JUDGE = (re.compile(r"\[\[\s*(\d{1,3})\s*\]\]"), re.compile(r"rating\W{0,5}(\d{1,3})\b", re.IGNORECASE))


def _clean(reply: str) -> str:
    return re.sub(r"[*_`#]", "", reply).strip().lower()


def parse_strict(reply: str) -> str | None:
    """``yes`` / ``no`` from the strict rater's reply, or None. "Yes, partially" is not an exact match: no."""
    m = _WORD.search(_clean(reply))
    if m is None:
        return None
    word = m.group(1)
    return "yes" if word == "yes" else "no"


def parse_permissive(reply: str) -> str | None:
    """``yes`` / ``partial`` / ``no`` from the permissive rater's reply, or None."""
    m = _WORD.search(_clean(reply))
    if m is None:
        return None
    word = m.group(1)
    return "partial" if "partial" in word else word


def parse_judge(reply: str) -> int | None:
    """The ``[[rating]]`` (1-100) of MemoChat's judge, or None."""
    for pattern in _JUDGE:
        found = [int(n) for n in pattern.findall(reply) if 1 <= int(n) <= 100]
        if found:
            return found[-1]
    return None


# LongMemEval's question types -> its judge prompt (src/evaluation/evaluate_qa.py get_anscheck_prompt)
LONGMEMEVAL_PROMPTS = {"single-session-user": "default", "single-session-assistant": "default",
                       "multi-session": "default", "temporal-reasoning": "temporal", "knowledge-update": "update",
                       "single-session-preference": "preference"}


def parse_yes_no(reply: str) -> bool | None:
    """LongMemEval's reading of its judge (``'yes' in reply.lower()``), None when the reply has neither word."""
    text = reply.lower()
    if "yes" in text:
        return True
    return False if re.search(r"\bno\b", text) else None


# MMLongBench-Doc-V2's verdict (eval/judge.py SCHEMA): the judge returns this object
MMLB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"equivalent": {"type": "boolean"}, "abstained": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["equivalent", "abstained", "reason"], "additionalProperties": False}
MMLB_GBNF = (r'root ::= "{\"equivalent\": " b ", \"abstained\": " b ", \"reason\": \"" r "\"}"' "\n"
             r'b ::= "true" | "false"' "\n" r'r ::= [^"\\\n]*')
MMLB_RESPONSE_CHARS = 12000  # eval/judge.py MAX_RESPONSE_CHARS
_FLAG = {key: re.compile(rf'"{key}"\s*:\s*(true|false)\b', re.IGNORECASE) for key in ("equivalent", "abstained")}
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)')


@dataclass(frozen=True)
class Verdict:
    """MMLongBench-Doc-V2's judgement of one response."""

    equivalent: bool
    abstained: bool
    reason: str = ""


def parse_verdict(reply: str) -> Verdict | None:
    """The judge's ``equivalent`` and ``abstained`` flags (the reason when there is one), read from the JSON
    object even inside prose or code fences or cut short after the flags; None without both flags."""
    flags = {key: pattern.search(reply) for key, pattern in _FLAG.items()}
    if flags["equivalent"] is None or flags["abstained"] is None:
        return None
    reason = _REASON.search(reply)
    return Verdict(flags["equivalent"].group(1).lower() == "true", flags["abstained"].group(1).lower() == "true",
                   reason.group(1) if reason else "")


def combine(strict: str | None, permissive: str | None) -> str:
    """The paper's rule for one reference."""
    if strict == "yes" or permissive == "yes":
        return "exact"
    if permissive == "partial":
        return "partial"
    return "none"


@dataclass
class Rating:
    """LR-1/LR-2 of one response: the best label over the references, with every rater decision."""

    label: str = "none"  # exact | partial | none
    decisions: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)

    @property
    def scores(self) -> dict[str, float]:
        return {"lr1": float(self.label == "exact"), "lr2": float(self.label in ("exact", "partial"))}


@dataclass
class Judgement:
    rating: int | None = None
    fallbacks: list[str] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)
    abstained: bool | None = None  # MMLongBench-Doc-V2's judge also says whether the response declined
    reason: str = ""

    @property
    def scores(self) -> dict[str, float]:
        out = {"judge": (self.rating or 0) / 100}
        if self.abstained is not None:
            out["abstained"] = float(self.abstained)
        return out

    def as_dict(self) -> dict[str, Any]:
        """What a run record keeps of the judgement."""
        out: dict[str, Any] = {"judge": self.rating, "fallbacks": self.fallbacks}
        if self.abstained is not None:
            out.update(abstained=self.abstained, reason=self.reason)
        return out


class Raters:
    """Rate responses with ``llm`` (the model under test, as in the paper, or a stronger one)."""

    def __init__(self, llm: LLM, max_retries: int = 2, constrained: bool = True) -> None:
        self.llm = llm
        self.max_retries = max_retries
        self.constrained = constrained

    def _ask(self, prompt: str, retry: str, parse: Callable[[str], Any], gbnf: str, max_tokens: int,
             trace: Trace, json_schema: dict[str, Any] | None = None) -> tuple[Any, str]:
        caps = self.llm.backend.capabilities
        enforced = (gbnf and caps.supports_grammar) or (json_schema and caps.supports_json_schema)
        constraint = (Constraint("rating", gbnf=gbnf or None, json_schema=json_schema)
                      if self.constrained and enforced else None)
        messages: tuple[Message, ...] = (Message("user", prompt),)
        reply = ""
        for _ in range(self.max_retries + 1):
            request = LLMRequest(messages=messages, role="rate", max_tokens=max_tokens, constraint=constraint)
            response, event = self.llm.complete(request, trace)
            reply = response.text
            value = parse(reply)
            trace.decide(event, f"rating {value}" if value is not None else "no rating in reply")
            if value is not None:
                return value, reply
            messages = messages + (Message("assistant", reply), Message("user", get_prompt("raters", retry).render()))
        return None, reply

    def rate(self, question: str, response: str, references: Iterable[str]) -> Rating:
        """LR-1 and LR-2 of ``response`` (best over ``references``)."""
        rating = Rating()
        for reference in references:
            values = {"question": question, "response": response, "reference": reference}
            strict, s_reply = self._ask(get_prompt("raters", "strict").render(**values), "retry.strict",
                                        parse_strict, 'root ::= "YES" | "NO"', 8, rating.trace)
            permissive, p_reply = self._ask(get_prompt("raters", "permissive").render(**values), "retry.permissive",
                                            parse_permissive, 'root ::= "Yes" | "Yes, partially" | "No"', 12,
                                            rating.trace)
            for name, value, reply in (("strict", strict, s_reply), ("permissive", permissive, p_reply)):
                if value is None:
                    rating.fallbacks.append(f"{name} rater named no rating after {self.max_retries + 1} replies "
                                            f"(counted as no match); last: {reply[:60]!r}")
            label = combine(strict, permissive)
            rating.decisions.append({"reference": reference[:80], "strict": strict, "permissive": permissive,
                                     "label": label})
            if RANK[label] > RANK[rating.label]:
                rating.label = label
        return rating

    def longmemeval(self, question_type: str, question: str, answer: str, response: str,
                    abstention: bool = False) -> Judgement:
        """LongMemEval's judge: its own prompt for the question type (or for abstention), yes or no; rated 100 for
        yes, as the benchmark's script reads a reply (``'yes' in reply.lower()``). A reply with neither word is
        asked again, then counted as no (a recorded fallback)."""
        judgement = Judgement()
        kind = "abstention" if abstention else LONGMEMEVAL_PROMPTS.get(question_type)
        if kind is None:
            judgement.fallbacks.append(f"no LongMemEval judge prompt for question type {question_type!r}: not judged")
            return judgement
        prompt = get_prompt("raters", f"longmemeval.{kind}").render(question=question, answer=answer,
                                                                     response=response)
        value, reply = self._ask(prompt, "retry.longmemeval", parse_yes_no, 'root ::= "yes" | "no"', 10,
                                 judgement.trace)
        judgement.rating = 100 if value else 0
        if value is None:
            judgement.fallbacks.append(f"judge said neither yes nor no (counted as no); last: {reply[:60]!r}")
        return judgement

    def mmlongbench(self, question: str, answer: str, answer_format: str, response: str) -> Judgement:
        """MMLongBench-Doc-V2's judge (PageIndex-OSS-Benchmark is scored with it): does the response mean the
        reference? Filled as its script fills it; a reply without both flags is asked again, then counted as
        not equivalent (a recorded fallback, as the script records a failed judgement)."""
        judgement = Judgement()
        prompt = get_prompt("raters", "mmlongbench.judge").render(
            question=" ".join(question.split()), answer=answer, answer_format=answer_format,
            response=response[:MMLB_RESPONSE_CHARS])
        verdict, reply = self._ask(prompt, "retry.mmlongbench", parse_verdict, MMLB_GBNF, 160, judgement.trace,
                                   json_schema=MMLB_SCHEMA)
        if verdict is None:
            judgement.rating, judgement.abstained = 0, False
            judgement.fallbacks.append(f"judge gave no verdict (counted as not equivalent); last: {reply[:60]!r}")
            return judgement
        judgement.rating = 100 if verdict.equivalent else 0
        judgement.abstained, judgement.reason = verdict.abstained, verdict.reason
        return judgement

    def judge(self, template: str | None, history: str, question: str, response: str) -> Judgement:
        """MTBench+: MemoChat's judge prompt (RCH_0 / UQ_1 / BR_2 placeholders), a 1-100 rating."""
        judgement = Judgement()
        if not template:
            judgement.fallbacks.append("no judge prompt (prompts.json beside the data): not judged")
            return judgement
        prompt = template.replace("RCH_0", history).replace("UQ_1", question).replace("BR_2", response or "(empty)")
        value, reply = self._ask(prompt, "retry.judge", parse_judge, "", 512, judgement.trace)
        judgement.rating = value
        if value is None:
            judgement.fallbacks.append(f"judge named no rating (counted as 0); last: {reply[:60]!r}")
        return judgement
