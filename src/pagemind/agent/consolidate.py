"""Between sessions (opt-in): a consolidation pass over what recall holds since the last one.

The MemGPT paper keeps a recursive summary of what leaves the context; Letta's sleep-time agents rework memory
between conversations. Here one pass reads the user's messages and the agent's replies since the last pass, in
windows that fit a small model's prompt, and asks the model — one call a window, through the one re-ask primitive —
for a short dated summary, the lasting facts the user told, and lines worth keeping in the ``human`` block. What it
proposes is written as everything else is: facts and the summary through :meth:`Archive.add` (a repeat is not stored
again), the lines as one new version of the block (revertable: ``agent memory revert``), each caused by
``consolidation (messages A-B)``. A window the model answers with nothing usable stops the pass there (recorded):
the next pass starts at that window again, and nothing is guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..llm.base import Constraint, LLMRequest
from ..llm.usage import Trace
from .archive import junk_reason
from .context import prompt
from .memory import Block, Event

if TYPE_CHECKING:
    from .core import Agent

WINDOW_WORDS = 900  # words of conversation per call (with the instructions, ~1,500 tokens)
MAX_FACTS = 5  # facts kept from one window
MAX_LINES = 3  # core-memory lines proposed from one window
ITEM_CHARS = 300  # a fact or a line, at most
SUMMARY_CHARS = 800
MARK = "consolidated_through"  # the agent state's key: the last event seq a pass has read

_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["summary", "facts", "human"],
           "properties": {"summary": {"type": "string", "maxLength": SUMMARY_CHARS},
                          "facts": {"type": "array", "maxItems": MAX_FACTS,
                                    "items": {"type": "string", "maxLength": ITEM_CHARS}},
                          "human": {"type": "array", "maxItems": MAX_LINES,
                                    "items": {"type": "string", "maxLength": ITEM_CHARS}}}}


@dataclass(frozen=True)
class Proposal:
    """What the model proposes from one window of messages."""

    summary: str
    facts: tuple[str, ...]
    human: tuple[str, ...]


@dataclass(frozen=True)
class Consolidation:
    """What one pass read and wrote."""

    messages: int = 0  # user messages and replies read
    through: int = 0  # the last event seq read (the next pass starts after it)
    windows: int = 0  # windows consolidated (one LLM call each, more with re-asks)
    stored: tuple[int, ...] = ()  # archival passages written (facts and summaries)
    known: int = 0  # facts already in archival memory (not stored again)
    junk: int = 0  # proposed facts and lines with nothing to tell (not stored)
    ungrounded: int = 0  # proposed facts and lines the messages do not hold (a name, a number, most words not in them)
    versions: tuple[tuple[str, int], ...] = ()  # (block label, version) written: revert them to undo
    skipped: tuple[str, ...] = ()  # lines that did not fit their block's limit
    problems: tuple[str, ...] = ()  # why a window stopped the pass (the next pass retries it)
    usage: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def windows(events: list[Event], words: int = WINDOW_WORDS) -> list[list[Event]]:
    """Consecutive runs of messages of about ``words`` words each (a message longer than that is a window alone)."""
    out: list[list[Event]] = []
    size = 0
    for e in events:
        n = len(_said(e).split())
        if out and size + n <= words:
            out[-1].append(e)
            size += n
        else:
            out.append([e])
            size = n
    return out


def _said(e: Event, bare: bool = False) -> str:
    """What a message or a sent reply says (``bare``: without its speaker's name in front, where it has one)."""
    said = str(e.payload.get("message", "")) if e.kind == "user_message" else \
        str(e.payload.get("arguments", {}).get("message", ""))
    speaker = e.payload.get("speaker")
    return said[len(speaker) + 2:] if bare and speaker and said.startswith(f"{speaker}: ") else said


def _who(e: Event) -> str:
    """Who said it, as a window shows it: the speaker a conversation names, else the user or the agent."""
    return str(e.payload.get("speaker") or ("user" if e.kind == "user_message" else "you"))


def _spoken(e: Event, boot: str) -> bool:
    """A user's message, or a reply the agent sent (not a held one, not its thoughts or calls, not its boot
    greeting: the step whose thoughts are ``boot``)."""
    if e.kind == "user_message":
        return True
    p = e.payload
    return e.kind == "step" and p.get("function") == "send_message" and not p.get("held") and \
        p.get("thoughts") != boot


def read_proposal(reply: str) -> Proposal | str:
    """The reply as a :class:`Proposal`, or what is wrong with it."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        return 'reply with one JSON object: {"summary": "...", "facts": [...], "human": [...]}'
    try:
        data = json.loads(reply[start:end + 1])
    except json.JSONDecodeError as err:
        return f"the JSON object does not parse ({err.msg})"
    if not isinstance(data, dict) or not isinstance(data.get("summary", ""), str):
        return '"summary" must be a string'
    from .turn import REFUSAL

    if REFUSAL.match(" ".join(str(data.get("summary", "")).split())):
        return '"summary" refuses instead of summarising: summarise what was said'
    lists = {}
    for key, cap in (("facts", MAX_FACTS), ("human", MAX_LINES)):
        items = data.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            return f'"{key}" must be a list of strings'
        lists[key] = tuple(" ".join(i.split())[:ITEM_CHARS] for i in items if i.strip())[:cap]
    return Proposal(" ".join(str(data.get("summary", "")).split())[:SUMMARY_CHARS], lists["facts"], lists["human"])


def consolidate(agent: Agent, trace: Trace | None = None,
                progress: Callable[[str, int, int, str], None] | None = None) -> Consolidation:
    """One consolidation pass of ``agent`` over recall since the last one (call it under the agent's turn lock,
    its state loaded; :meth:`Agent.consolidate` does)."""
    from ..llm.decide import Invalid, decide
    from .turn import supersedes

    trace = trace if trace is not None else Trace()
    after = int(agent.state.extra.get(MARK, 0))
    boot = prompt("boot_thoughts")
    # the messages and steps recall search sees, those after the last pass only read whole
    later = [seq for seq, *_ in agent.store.event_texts(agent.id) if seq > after]
    fresh = [e for e in agent.store.events(agent.id, later) if _spoken(e, boot) and _said(e).strip()]
    if not fresh:
        return Consolidation(through=after, usage=trace.usage.as_dict())
    stored: list[int] = []
    versions: list[tuple[str, int]] = []
    skipped: list[str] = []
    known = junk = ungrounded = done = read = 0
    through = after
    problems: tuple[str, ...] = ()
    parts = windows(fresh)
    judge = (lambda old, new: supersedes(agent.llm, trace, old, new)) if agent.options.supersede_check else None
    for n, part in enumerate(parts):
        if progress is not None:
            progress("consolidating", n, len(parts), "windows")
        human = next((b for b in agent.blocks() if b.label == "human"), None)
        lines = "\n".join(f"[{e.time[:16]}] {_who(e)}: {_said(e, bare=True)}" for e in part)
        when = part[-1].time or agent.now()  # what the window holds was said by then (an imported history's date)
        named = sorted({str(e.payload["speaker"]) for e in part if e.payload.get("speaker")})
        speakers = " and ".join((", ".join(named[:-1]), named[-1])) if len(named) > 1 else "".join(named)
        request = LLMRequest.user(prompt("consolidate", human=human.value if human else "", messages=lines,
                                         speakers=speakers),
                                  role="consolidate", max_tokens=600,
                                  constraint=Constraint("consolidation", json_schema=_SCHEMA))

        def parse(reply: str) -> Proposal | Invalid:
            got = read_proposal(reply)
            return Invalid(got) if isinstance(got, str) else got

        decision = decide(agent.llm, request, parse, trace, retries=1)
        if decision.value is None:
            problems = (f"messages {part[0].seq}-{part[-1].seq}: no usable reply "
                        f"({'; '.join(decision.problems)}); the next pass starts here",)
            trace.note(problems[0])
            break
        cause = f"consolidation (messages {part[0].seq}-{part[-1].seq})"
        proposal = decision.value
        heard = Heard(" ".join(_said(e) for e in part))  # the window read once for every proposal
        facts, about = heard.sift(proposal.facts), heard.sift(proposal.human)
        junk += facts.junk + about.junk
        ungrounded += facts.ungrounded + about.ungrounded
        for fact in facts.kept:  # a fact that replaces a stored one supersedes it, as a turn's insert does
            added = agent.archive.add(fact, when, source=cause, judge=judge)
            if added.stored:
                stored.append(added.passage.id)
            else:
                known += 1
        if proposal.summary:
            span = f"{part[0].time[:10]} to {part[-1].time[:10]}"
            added = agent.archive.add(f"Summary of the conversation, {span}: {proposal.summary}", when,
                                      source=cause)
            if added.stored:
                stored.append(added.passage.id)
        if human is not None and about.kept:
            value, left = _appended(human, about.kept)
            skipped += left
            if value != human.value:
                number = agent.store.put_block(agent.id, Block(human.label, value, human.limit, human.description),
                                               cause)
                versions.append((human.label, number))
        done += 1
        read += len(part)
        through = part[-1].seq
        agent.state.extra[MARK] = through
    return Consolidation(read, through, done, tuple(stored), known, junk, ungrounded, tuple(versions), tuple(skipped),
                         problems, trace.usage.as_dict())


# what a fact says of its subject in general terms, not what the messages must hold
_GENERIC = "user human assistant name call live work like enjoy has have tell told said say mention want"


@dataclass(frozen=True)
class Sifted:
    """Proposals sifted against their window: those to write, and how many were left out and why."""

    kept: tuple[str, ...]
    junk: int  # nothing to tell (:meth:`Heard.tells`)
    ungrounded: int  # not in the messages (:meth:`Heard.holds`)


class Heard:
    """What a window's messages said, read once for every proposal checked against it."""

    def __init__(self, said: str) -> None:
        self.text = said.lower()
        self.words = _terms(said)
        self.generic = _terms(_GENERIC)

    def holds(self, fact: str) -> bool:
        """Whether the messages hold what ``fact`` tells: each name (a capitalised word past a sentence's first)
        and number in it, and at least half of its other content words. A small model asked for facts copies its
        prompt's example or its own guess ("The user's name is Ada." of a conversation that names no one)."""
        for sentence in re.split(r"(?<=[.!?])\s+", fact.strip()):
            for word in re.findall(r"(?<=\s)[A-Z][\w'-]+|\d[\d.,:]*", sentence):
                name = re.sub(r"'s$", "", word).rstrip(".,:").lower()
                if name and not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", self.text):  # "Ada" is not "Canada"
                    return False
        words = _terms(fact) - self.generic
        return not words or sum(self._heard_as(w) for w in words) * 2 >= len(words)

    def _heard_as(self, word: str) -> bool:
        """The same word among the messages', or one sharing its first letters ("runs", "run")."""
        return any(word[:n] == h[:n] for h in self.words if (n := max(3, min(len(word), len(h), 4))) <= len(h))

    def tells(self, proposal: str) -> bool:
        """Whether ``proposal`` tells anything: not junk (:func:`~pagemind.agent.archive.junk_reason`), nor only
        whom it is about in general words ("The user is a human.")."""
        return junk_reason(proposal) is None and bool(_terms(proposal) - self.generic)

    def sift(self, proposals: tuple[str, ...]) -> Sifted:
        told = tuple(p for p in proposals if self.tells(p))
        kept = tuple(p for p in told if self.holds(p))
        return Sifted(kept, len(proposals) - len(told), len(told) - len(kept))


def _terms(text: str) -> set[str]:
    """Stemmed content words ("running" is "ran"'s and "runs"'), the evidence module's."""
    from ..text.words import terms

    return terms(text)


def grounded(fact: str, said: str) -> bool:
    """Whether the messages ``said`` hold what ``fact`` tells (:meth:`Heard.holds`)."""
    return Heard(said).holds(fact)


def _appended(block: Block, lines: tuple[str, ...]) -> tuple[str, list[str]]:
    """The block's value with each line it does not hold yet appended, while it fits; and the lines that did not."""
    value, left = block.value, []
    for line in lines:
        # held already, whole words, with or without its full stop ("lives in York" is not held by "Yorkshire")
        if re.search(rf"(?<!\w){re.escape(line.strip().rstrip(' .'))}(?!\w)", value, re.IGNORECASE):
            continue
        candidate = f"{value}\n{line}" if value else line
        if len(candidate) <= block.limit:
            value = candidate
        else:
            left.append(line)
    return value, left
