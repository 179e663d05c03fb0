"""The LLM requests MemWalker sends, with the grammars that fix their reply forms on capable backends."""

from __future__ import annotations

from ...answering.question import Question
from ...llm.base import Constraint, LLMRequest, Message
from ...prompts import get_prompt
from .memory import MemWalkerOptions

GROUP = "memwalker"


def flat(text: str) -> str:
    """One line: the prompts list summaries as ``Summary i: ...`` lines."""
    return " ".join(text.split())


def leaf_summary_request(text: str, max_tokens: int) -> LLMRequest:
    prompt = get_prompt(GROUP, "leaf_summary").render(text=text)
    return LLMRequest(messages=(Message("user", prompt),), role="summarise", max_tokens=max_tokens)


def nonleaf_summary_request(summaries: str, max_tokens: int) -> LLMRequest:
    prompt = get_prompt(GROUP, "nonleaf_summary").render(summaries=summaries)
    return LLMRequest(messages=(Message("user", prompt),), role="summarise", max_tokens=max_tokens)


def _reasoning_rule(opts: MemWalkerOptions) -> str:
    return f'reason ::= [^\\n]{{1,{opts.reasoning_chars}}}'


def triage_request(question: Question, shown: list[tuple[int, str]], opts: MemWalkerOptions) -> LLMRequest:
    """The triage prompt over the children still allowed, each as ``Summary <its number>: <summary>``."""
    name = ("triage" if opts.reasoning else "triage_no_reasoning") + (
        ".summaries_first" if opts.layout == "prefix-cache" else "")
    summaries = "\n".join(f"Summary {i}: {flat(s)}" for i, s in shown)
    prompt = get_prompt(GROUP, name).render(question=question.text, summaries=summaries)
    constraint = None
    max_tokens = opts.max_tokens
    if opts.constrained:
        numbers = " | ".join(f'"{i}"' for i, _ in shown)
        if opts.reasoning:
            gbnf = f'root ::= "Reasoning: " reason "\\nAction: " ({numbers})\n{_reasoning_rule(opts)}'
            max_tokens = opts.reasoning_chars + 16
        else:
            gbnf = f'root ::= "Action: " ({numbers})'
            max_tokens = 8
        constraint = Constraint(name="triage", gbnf=gbnf)
    return LLMRequest(messages=(Message("user", prompt),), role="navigate", max_tokens=max_tokens,
                      constraint=constraint)


def leaf_request(question: Question, text: str, working_memory: str, opts: MemWalkerOptions,
                 forced: bool = False) -> LLMRequest:
    """The leaf prompt: segment text, the working memory as background, the question (and options).
    ``forced``: the grammar offers only the answer action (-2), not the revert (-1)."""
    if question.is_choice:
        prompt = get_prompt(GROUP, "leaf_choice").render(
            working_memory=working_memory, text=text, question=question.text, options=question.options_block())
    else:
        prompt = get_prompt(GROUP, "leaf").render(
            working_memory=working_memory, text=text, question=question.text, options="")
    constraint = None
    max_tokens = opts.max_tokens
    if opts.constrained:
        if question.is_choice:
            letters = " | ".join(f'"{c}"' for c in question.letters)
            answer = f'"-2\\nAnswer: (" ({letters}) ")"'
            extra, answer_tokens = "", 8
        else:
            answer = '"-2\\nAnswer: " free'
            extra, answer_tokens = f'\nfree ::= [^\\n]{{1,{opts.reasoning_chars}}}', opts.reasoning_chars
        actions = answer if forced else f'"-1" | {answer}'
        gbnf = f'root ::= "Reasoning: " reason "\\nAction: " ({actions})\n{_reasoning_rule(opts)}{extra}'
        constraint = Constraint(name="leaf", gbnf=gbnf)
        max_tokens = opts.reasoning_chars + answer_tokens + 16
    return LLMRequest(messages=(Message("user", prompt),), role="navigate", max_tokens=max_tokens,
                      constraint=constraint)


def retry_request(request: LLMRequest, reply: str, problem: str, *, choices: list[int] | None = None,
                  question: Question | None = None) -> LLMRequest:
    """The same request continued: the invalid reply, then a short correction (a new, uncached request)."""
    if choices is not None:
        follow_up = get_prompt(GROUP, "retry.triage").render(
            problem=problem, choices=", ".join(str(c) for c in choices))
    else:
        hint = "(X)" if question is not None and question.is_choice else "..."
        follow_up = get_prompt(GROUP, "retry.leaf").render(problem=problem, answer_hint=hint)
    messages = request.messages + (Message("assistant", reply), Message("user", follow_up))
    return LLMRequest(messages=messages, role=request.role, max_tokens=request.max_tokens,
                      constraint=request.constraint)
