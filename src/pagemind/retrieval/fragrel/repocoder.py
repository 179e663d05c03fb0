"""Texts of the code reader: RepoCoder's completion prompt, the question context, and reading a completion
out of a chat model's reply.

RepoCoder's prompt (FragRel Prompt 2), exactly as ``RepoCoder/build_prompt.py`` lays it out::

    # Here are some relevant code fragments from other files of the repo:
    # --------------------------------------------------
    # the below code fragment can be found in:
    # pkg/util.py
    # --------------------------------------------------
    # def helper(x):
    # ...
    # --------------------------------------------------
    (more blocks; the best-ranked block comes last, next to the code)
    <blank line>
    <the current file up to the line being completed>

A window found in several files lists every path, one ``# path`` line each (RepoCoder merges identical
windows). Code lines are commented as ``"# " + line`` (a blank line becomes ``"# "``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ...prompts import get_prompt
from ..fragments import Fragment

_FENCE = re.compile(r"^\s*```")


def comment_lines(text: str) -> str:
    return "\n".join(f"# {line}" for line in text.split("\n"))


def repocoder_block(fragment: Fragment, paths: Sequence[str]) -> str:
    """One retrieved window as RepoCoder comments it (ends with a newline)."""
    return get_prompt("code", "repocoder.block").render(paths="\n".join(f"# {p}" for p in paths),
                                                        lines=comment_lines(fragment.text))


def repocoder_context(ranked: Sequence[Fragment], paths: Callable[[Fragment], Sequence[str]]) -> str:
    """The retrieved part of the prompt for fragments given best first: blocks from the least to the most
    similar (RepoCoder inserts each accepted block at the front), under the header."""
    blocks = "".join(repocoder_block(f, paths(f)) for f in reversed(list(ranked)))
    return get_prompt("code", "repocoder.context").render(blocks=blocks)


def repocoder_prompt(context: str | None, code: str) -> str:
    """RepoCoder's ``prepend_context + '\\n' + prompt``; without a context, the code alone."""
    return code if context is None else context + "\n" + code


def code_text(lines: Sequence[str]) -> str:
    """The unfinished file as shown: its lines, each ending with a newline (the model writes the next line)."""
    return "".join(line + "\n" for line in lines)


def keep_last_lines(lines: Sequence[str], fits: Callable[[str], bool]) -> int:
    """The first line index ``s`` such that ``code_text(lines[s:])`` fits, cutting whole lines from the top
    (the lines next to the hole matter most); ``len(lines)`` when not even the last line fits."""
    if fits(code_text(lines)):
        return 0
    lo, hi = 1, len(lines)  # fits(lines[hi:]) holds for hi = len(lines) (the empty text)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(code_text(lines[mid:])):
            hi = mid
        else:
            lo = mid + 1
    return hi


def context_block(fragment: Fragment, paths: Sequence[str]) -> str:
    """A fragment for a question: ``# path (lines a-b)`` (1-based, inclusive), then its code."""
    where = ", ".join(paths)
    return f"# {where} (lines {fragment.start + 1}-{fragment.end})\n{fragment.text}"


def question_context(ranked: Sequence[Fragment], paths: Callable[[Fragment], Sequence[str]]) -> str:
    return "\n\n".join(context_block(f, paths(f)) for f in ranked)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def extract_completion(reply: str, prefix: Sequence[str], max_lines: int,
                       truncated: bool = False) -> tuple[str, list[str]]:
    """The completed lines in a chat model's reply, and notes on what was dropped.

    1. Markdown: when the reply holds a fenced block, its content (the first block) is the code.
    2. Echo: leading reply lines equal to the last lines of the given code (the model repeating the prompt)
       are dropped: the longest such run.
    3. Leading blank lines are dropped. Then lines are kept up to, not including, the first **blank line** or
       the first line **indented less than the first kept line** (the completion left its block), and at most
       ``max_lines``.

    ``truncated`` (the reply hit its token limit): the reply's last line is cut mid-way and is dropped first
    (unless it is the only line).
    """
    notes: list[str] = []
    lines = reply.replace("\r\n", "\n").split("\n")
    if truncated and len(lines) > 1:
        lines = lines[:-1]
        notes.append("dropped the reply's last line: cut by the token limit")
    fences = [i for i, line in enumerate(lines) if _FENCE.match(line)]
    if fences:
        end = fences[1] if len(fences) > 1 else len(lines)
        lines = lines[fences[0] + 1:end]
        notes.append("code taken from the reply's Markdown block")
    tail = [line.rstrip() for line in prefix]
    for k in range(min(len(lines), len(tail)), 0, -1):
        if [line.rstrip() for line in lines[:k]] == tail[len(tail) - k:]:
            lines = lines[k:]
            notes.append(f"dropped {k} line(s) repeating the given code")
            break
    while lines and not lines[0].strip():
        lines = lines[1:]
    kept: list[str] = []
    for line in lines:
        if not line.strip() or (kept and _indent(line) < _indent(kept[0])) or len(kept) >= max_lines:
            break
        kept.append(line.rstrip())
    if len(kept) < len([line for line in lines if line.strip()]):
        notes.append(f"kept {len(kept)} line(s): stopped at a blank line, a dedent or the {max_lines}-line limit")
    return "\n".join(kept), notes
