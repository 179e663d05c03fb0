"""A run's steps as typed values, and their one JSON form and one-line text for every client.

The store keeps a step as ``(seq, kind, data, created)`` with ``data`` a plain dict (:class:`StepRow`). This module
reads that dict into one frozen dataclass per kind — :class:`LLMCall`, :class:`Decision`, :class:`Phase`,
:class:`Note`, :class:`AgentStep`, :class:`Result`, :class:`Error`, and :class:`Other` for a kind it does not know —
so the CLI (``pagemind logs show``), the HTTP API and its event stream, the MCP server and the web viewer render a
step from the same value: :func:`as_json` is the JSON every client gets, :func:`line` its one line of text.

Reading is tolerant, because steps stored by older versions must still show: a field the stored dict lacks takes
its default (and is named in ``absent``), a key this module does not know is kept in ``extra``. :func:`data` gives
back the dict as stored, so ``data(parse(seq, kind, d, t)) == d``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .store.rows import StepRow

__all__ = [
    "KINDS",
    "AgentStep",
    "Decision",
    "Error",
    "LLMCall",
    "Note",
    "Other",
    "Phase",
    "Result",
    "Step",
    "as_json",
    "data",
    "from_row",
    "line",
    "parse",
]


@dataclass(frozen=True, kw_only=True)
class Stored:
    """What every step has besides its kind's fields: its place in the run (``seq``, -1 until stored), when it was
    written, the stored keys its kind does not declare, and the declared fields the stored dict lacked."""

    seq: int = -1
    created: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False)


@dataclass(frozen=True, kw_only=True)
class LLMCall(Stored):
    """One LLM call: its role, tokens, seconds, whether the cache answered it, its reply (clipped) and the decision
    made of it when that was known as it was recorded (usually a :class:`Decision` step follows instead)."""

    kind: ClassVar[str] = "llm"
    role: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False
    reply: str = ""
    decision: str | None = None


@dataclass(frozen=True, kw_only=True)
class Decision(Stored):
    """What the method read from an LLM call's reply (``call``: that call's step's seq, when known)."""

    kind: ClassVar[str] = "decision"
    decision: str = ""
    role: str = ""
    call: int | None = None


@dataclass(frozen=True, kw_only=True)
class Phase(Stored):
    """A phase of the method and its progress (``done`` of ``total`` ``unit``s; ``total`` 0: not counted)."""

    kind: ClassVar[str] = "phase"
    phase: str = ""
    done: int = 0
    total: int = 0
    unit: str = ""


@dataclass(frozen=True, kw_only=True)
class Note(Stored):
    """A remark of the method, e.g. a fallback it took."""

    kind: ClassVar[str] = "note"
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class AgentStep(Stored):
    """One step of an agent's turn: what it thought, the function it called with which arguments, what came back
    (``status`` OK or Failed), whether it asked for another step (``heartbeat``) and whether its reply was a valid
    action; ``prompt_tokens``: the context it was given."""

    kind: ClassVar[str] = "step"
    thoughts: str = ""
    function: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    status: str = ""
    heartbeat: str | None = None
    valid: bool = True
    prompt_tokens: int = 0
    source: int | None = None  # a core-memory edit: the seq of the user message the saved fact came from
    citations: list[dict[str, Any]] = field(default_factory=list)  # that message, cited (Citation.as_dict)


@dataclass(frozen=True, kw_only=True)
class Result(Stored):
    """The run's result, its last step: an answer (``answer``, ``letter``, the units read), an agent turn's
    ``messages``, or an index build's ``memory``; the rest of it (usage, options, ...) is in ``extra``."""

    kind: ClassVar[str] = "result"
    answer: str | None = None
    letter: str | None = None
    pages_read: list[int] | None = None
    read_unit: str | None = None
    messages: list[str] | None = None
    stop_reason: str | None = None
    memory: str | None = None
    document: str | None = None
    citations: list[dict[str, Any]] | None = None  # what the answer or reply rests on (Citation.as_dict each)


@dataclass(frozen=True, kw_only=True)
class Error(Stored):
    """Why the run failed or stopped (``type``: the exception's class name, ``RunCancelled``, ``Interrupted``)."""

    kind: ClassVar[str] = "error"
    error: str = ""
    type: str = ""


@dataclass(frozen=True, kw_only=True)
class Other(Stored):
    """A step of a kind this version does not know; all its data is in ``extra``."""

    kind: str = ""


Step = LLMCall | Decision | Phase | Note | AgentStep | Result | Error | Other
KINDS: dict[str, type[Step]] = {c.kind: c for c in (LLMCall, Decision, Phase, Note, AgentStep, Result, Error)}
_ENVELOPE = frozenset(f.name for f in fields(Other))  # seq, created, extra, absent, kind


_OWN: dict[type[Step], tuple[str, ...]] = {}


def _own(cls: type[Step]) -> tuple[str, ...]:
    """The fields a kind's stored dict carries, in order (worked out once per kind)."""
    own = _OWN.get(cls)
    if own is None:
        own = _OWN[cls] = tuple(f.name for f in fields(cls) if f.name not in _ENVELOPE)
    return own


def parse(seq: int, kind: str, data: Mapping[str, Any], created: float) -> Step:
    """A stored step as its typed value (an unknown kind as :class:`Other`)."""
    cls = KINDS.get(kind)
    if cls is None:
        return Other(seq=seq, created=created, kind=kind, extra=dict(data))
    own = _own(cls)
    if cls is Result and not isinstance(data.get("messages", []), list):  # a consolidation pass counts messages
        own = tuple(k for k in own if k != "messages")
    return cls(seq=seq, created=created, **{k: v for k, v in data.items() if k in own},
               extra={k: v for k, v in data.items() if k not in own},
               absent=frozenset(k for k in own if k not in data))


def from_row(row: StepRow) -> Step:
    return parse(row.seq, row.kind, row.data, row.created)


def data(step: Step) -> dict[str, Any]:
    """The step's data as the store keeps it (its kind's fields, then ``extra``)."""
    return {**{k: getattr(step, k) for k in _own(type(step)) if k not in step.absent}, **step.extra}


def as_json(step: Step) -> dict[str, Any]:
    """The one JSON form of a step: ``{"seq", "kind", "created", "data", "text"}`` (``data`` as stored, ``text``
    its :func:`line`)."""
    return {"seq": step.seq, "kind": step.kind, "created": step.created, "data": data(step), "text": line(step)}


def line(step: Step) -> str:
    """The step in one line of text (without its seq), saying what matters of its kind."""
    if isinstance(step, LLMCall):
        cached = ", cached" if step.cached else ""
        decision = f" -> {clip(step.decision, 80)}" if step.decision else ""
        reply = f" | {clip(step.reply, 90)}" if step.reply.strip() else ""
        return (f"llm {step.role or '?'}: {step.prompt_tokens:,}+{step.completion_tokens:,} tokens, "
                f"{step.seconds:.2f} s{cached}{decision}{reply}")
    if isinstance(step, Decision):
        call = f" (call {step.call})" if step.call is not None else ""
        return f"decision {step.role or '?'}{call} -> {clip(step.decision)}"
    if isinstance(step, Phase):
        count = (f" {step.done:,}/{step.total:,} {step.unit}" if step.total
                 else f" {step.done:,} {step.unit}" if step.done else "")
        return f"phase {step.phase}{count}".rstrip()
    if isinstance(step, Note):
        return f"note: {clip(step.text)}"
    if isinstance(step, AgentStep):
        arguments = ", ".join(f"{k}={v!r}" for k, v in step.arguments.items())
        flags = [step.status or "?", *(["invalid"] if not step.valid else []),
                 *([f"heartbeat {step.heartbeat}"] if step.heartbeat else [])]
        got = f" -> {clip(step.result, 80)}" if step.result.strip() else ""
        thoughts = f" | thoughts: {clip(step.thoughts, 80)}" if step.thoughts.strip() else ""
        called = f"{step.function or '(no function)'}({clip(arguments, 80)})"
        return f"agent step {called} [{', '.join(flags)}]{got}{thoughts}"
    if isinstance(step, Result):
        return f"result: {_said(step)}"
    if isinstance(step, Error):
        return f"error {step.type}: {clip(step.error, 300)}" if step.type else f"error: {clip(step.error, 300)}"
    return f"{step.kind}: {clip(json.dumps(step.extra, ensure_ascii=False, default=str))}"


def _said(result: Result) -> str:
    if result.answer is not None:
        letter = f"({result.letter}) " if result.letter else ""
        unit = result.read_unit or "page"
        read = f"; {len(result.pages_read)} {unit}{'s' * (len(result.pages_read) != 1)} read" \
            if result.pages_read else ""
        return f"{letter}{clip(result.answer)}{read}"
    if result.messages is not None:
        sent = " / ".join(result.messages) if result.messages else "no message sent"
        return clip(sent) + (f" (stopped: {result.stop_reason})" if result.stop_reason not in (None, "yield") else "")
    if result.memory is not None:
        return f"memory {result.memory}"
    if "windows" in result.extra:  # a consolidation pass
        stored = result.extra.get("stored") or []
        return f"read {result.extra.get('messages', 0)} messages in {result.extra['windows']} windows, stored " \
               f"{len(stored)} passages"
    return ", ".join(sorted(data(result))) or "done"


def clip(text: str, chars: int = 160) -> str:
    """``text`` on one line (its whitespace collapsed), cut to ``chars`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= chars else text[:chars - 1] + "…"
