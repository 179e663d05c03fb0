"""Tolerant parsers for MemWalker's navigation replies. Each returns a typed result; none guesses silently.

The action is read from the LAST ``Action:`` line (so an ``Action: 3`` quoted inside the reasoning does not
win); markdown (``**Action:** 2``), a trailing period, brackets and ``Summary 2`` are accepted; the format
template echoed back (``Action: 0 / 1 / 2, …``) is not. Triage accepts only offered child numbers; a leaf
accepts -1, or -2 with an answer (for multiple choice, an option letter read by :func:`read_choice`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...answering.question import Question, read_choice

_LEAD = r"[ \t>#*_`\-]*"
_ACTION_BODY = (r"action\s*[*_`]*\s*[:：]\s*[*_`]*\s*(?:(?:summary|passage|node)\s*#?\s*)?[\[(]?\s*"
                r"(-?\d+)(?!\d)([^\n]*)")
_ACTION_LINE = re.compile(rf"^{_LEAD}{_ACTION_BODY}", re.IGNORECASE | re.MULTILINE)
_ACTION_ANY = re.compile(rf"(?<![A-Za-z]){_ACTION_BODY}", re.IGNORECASE)
_REASONING = re.compile(r"reasoning\s*[*_`]*\s*[:：]\s*[*_`]*", re.IGNORECASE)
_ANSWER = re.compile(r"(?<![A-Za-z])answer\s*[*_`]*\s*[:：]\s*[*_`]*[ \t]*", re.IGNORECASE)
_RULE = re.compile(r"^\s*#{3,}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Triage:
    child: int | None  # the chosen child number, or None when the reply gave no valid one
    reasoning: str = ""
    problem: str = ""  # why not, when child is None


@dataclass(frozen=True)
class LeafReply:
    action: int | None  # -1 (revert) or -2 (answer); None when invalid
    reasoning: str = ""
    answer: str = ""  # the answer text as the model gave it (after "Answer:")
    choice: int | None = None  # 0-based option for multiple choice
    problem: str = ""


def find_action(reply: str) -> tuple[int | None, int, str, str]:
    """(action, start of its match, rest of its line, problem) from the last ``Action:`` line."""
    text = _RULE.sub("", reply)
    matches = list(_ACTION_LINE.finditer(text)) or list(_ACTION_ANY.finditer(text))
    if not matches:
        bare = re.fullmatch(r"\s*[*_`]*\s*(-?\d+)\s*[.)]?\s*[*_`]*\s*", text)
        if bare:
            return int(bare.group(1)), 0, "", ""
        return None, -1, "", "no 'Action:' line"
    m = matches[-1]
    rest = m.group(2)
    if re.match(r"\s*(/|or\b)\s*-?\d", rest):
        return None, m.start(), rest, "the reply repeats the format template instead of choosing"
    return int(m.group(1)), m.start(), rest, ""


def reasoning_of(reply: str, action_at: int) -> str:
    """The text after ``Reasoning:`` (or the whole reply) up to the chosen action, on one line."""
    text = _RULE.sub("", reply)
    head = text[:action_at] if action_at >= 0 else text
    found = list(_REASONING.finditer(head))
    if found:
        head = head[found[0].end():]
    return " ".join(head.split())


def parse_triage(reply: str, n_children: int, excluded: frozenset[int] = frozenset(),
                 hidden: frozenset[int] = frozenset()) -> Triage:
    """The child a triage reply chooses: valid when ``0 <= child < n_children``, not excluded and not ``hidden`` (a
    guided triage shows some children at a time)."""
    if not reply.strip():
        return Triage(None, problem="empty reply")
    action, at, _, problem = find_action(reply)
    reasoning = reasoning_of(reply, at)
    if action is None:
        return Triage(None, reasoning, problem)
    if action < 0:
        return Triage(None, reasoning, f"action {action} is not allowed here: choose a summary number")
    if action >= n_children:
        return Triage(None, reasoning, f"summary {action} does not exist (0..{n_children - 1})")
    if action in excluded:
        return Triage(None, reasoning, f"summary {action} was already read and rejected")
    if action in hidden:
        return Triage(None, reasoning, f"summary {action} is not among those shown: choose one of them")
    return Triage(action, reasoning)


def parse_leaf(reply: str, question: Question) -> LeafReply:
    """A leaf decision: -1, or -2 with an answer (an option letter for multiple choice)."""
    if not reply.strip():
        return LeafReply(None, problem="empty reply")
    action, at, _, problem = find_action(reply)
    reasoning = reasoning_of(reply, at)
    if action is None:
        return LeafReply(None, reasoning, problem=problem)
    if action not in (-1, -2):
        return LeafReply(None, reasoning, problem=f"action {action} is not allowed at a leaf (only -2 or -1)")
    if action == -1:
        return LeafReply(-1, reasoning)
    answer = _answer_text(_RULE.sub("", reply), at)
    if not answer:
        return LeafReply(None, reasoning, problem="action -2 without an 'Answer:'")
    if not question.is_choice and _no_answer(answer, question.text):  # "Answer: None": this leaf does not answer
        return LeafReply(-1, f"{reasoning} (answered {answer!r}: read as -1)".strip())
    if question.is_choice:
        read = read_choice("Answer: " + answer, question)
        if read.index is None:
            return LeafReply(None, reasoning, answer, problem=f"action -2 without an option letter of "
                                                                f"{', '.join(question.letters)} ({read.problem})")
        return LeafReply(-2, reasoning, answer, read.index)
    return LeafReply(-2, reasoning, answer)


def _answer_text(text: str, action_at: int) -> str:
    """What follows ``Answer:`` after the action (else the last ``Answer:`` anywhere), trimmed."""
    after = list(_ANSWER.finditer(text, max(action_at, 0)))
    anywhere = after or list(_ANSWER.finditer(text))
    found = (after[0] if after else anywhere[-1]) if anywhere else None
    if found is None:
        return ""
    answer = text[found.end():]
    answer = re.split(r"\n\s*(?:reasoning|action)\s*[:：]", answer, flags=re.IGNORECASE)[0]
    return answer.strip().strip("*_` ").strip()


_NULL = re.compile(r"(?:none|nothing|-[12])", re.IGNORECASE)  # a code model's null; the actions' own numbers
_COUNTS = re.compile(r"\b(?:how\s+(?:many|much|often)|any|anyone|anything|number\s+of)\b", re.IGNORECASE)


def _no_answer(answer: str, question: str) -> bool:
    """Whether a leaf's answer stands for none: a stand-in (:func:`~pagemind.answering.support.placeholder`), an
    action's number ("-1", "-2" after ``Answer:``), or "None" / "Nothing" where the question asks no count or
    existence ("How many …?", "Were there any …?" are answered so). Read as the leaf's rejection, the walk reads on;
    a "None" that answered "What impairment charges …?" is then lost unless a later leaf says it again in words."""
    from ...answering.support import bare, placeholder

    said = bare(answer)
    if placeholder(answer) or said in ("-1", "-2"):
        return True
    return bool(_NULL.fullmatch(said)) and not _COUNTS.search(question)
