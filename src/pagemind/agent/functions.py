"""The paper's function set, each function declared once: a method of :class:`Toolbox` whose signature gives
the arguments (``Annotated`` with a :class:`Param` for their kind and bounds) and whose description for the
processor is its prompt ``function.<name>`` in ``prompts/memgpt.yaml``.

From that declaration come the specs (:data:`FUNCTIONS`) the grammar, the JSON schema, the native tools,
validation and the system prompt's function list are made of. Every non-terminal function also takes
``request_heartbeat``. An expected failure (an edit over the block limit, text not found, a bad date) raises
:class:`ToolError`, whose message goes back to the processor as the function result.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Annotated, Any, TypeVar

from ..citations import Citation
from ..errors import ConfigError
from ..prompts import get_prompt
from .archive import Archive
from .evidence import message_citation, passage_citation
from .memory import AgentOptions, Block, Event, SearchPage
from .store import AgentStore

F = TypeVar("F", bound=Callable[..., str])
_TERMINAL = "__memgpt_terminal__"


class ToolError(Exception):
    """An expected failure of a function call; the message is shown to the processor."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # string | integer | boolean | label | date
    max_length: int = 0  # strings: the grammar's bound
    min_length: int = 1  # strings: 0 lets the value be empty (a replacement that deletes)
    maximum: int = 99  # integers: 0..maximum (validated after parsing; llama.cpp schemas do not enforce it)


def text(max_length: int, min_length: int = 1) -> Param:
    """A string argument of at most ``max_length`` characters (in an ``Annotated[str, ...]``)."""
    return Param("", "string", max_length, min_length)


Label = Annotated[str, Param("", "label")]  # a core-memory block's label (the agent's labels, as alternatives)
Day = Annotated[str, Param("", "date")]  # YYYY-MM-DD
PageNumber = Annotated[int, Param("", "integer")]  # 0..99
_PLAIN = {int: "integer", bool: "boolean"}


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    params: tuple[Param, ...]
    terminal: bool = False  # True: yields control (no request_heartbeat)

    @property
    def all_params(self) -> tuple[Param, ...]:
        return self.params if self.terminal else self.params + (Param("request_heartbeat", "boolean"),)

    @property
    def description(self) -> str:
        """What the processor is told the function does (its prompt ``function.<name>``)."""
        return get_prompt("memgpt", f"function.{self.name}").render()

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(p.name for p in self.all_params)})"


def function(fn: F | None = None, *, terminal: bool = False) -> Any:
    """Mark a :class:`Toolbox` method as a function the processor may call (``terminal``: it yields control)."""
    def mark(f: F) -> F:
        setattr(f, _TERMINAL, terminal)
        return f

    return mark(fn) if fn is not None else mark


def spec_of(method: Callable[..., str]) -> FunctionSpec:
    """The spec of a declared function, read from its signature."""
    hints = typing.get_type_hints(method, include_extras=True)
    params = []
    for name, hint in hints.items():
        if name == "return":
            continue
        marks = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Param)]
        if marks:
            params.append(replace(marks[0], name=name))
        elif hint in _PLAIN:
            params.append(Param(name, _PLAIN[hint]))
        else:
            raise TypeError(f"{method.__name__}({name}): annotate a string with its bound, e.g. Annotated[str, "
                            "text(100)], or use Label, Day, PageNumber")
    return FunctionSpec(method.__name__, tuple(params), getattr(method, _TERMINAL))


def over_limit(label: str, limit: int, requested: int) -> str:
    return (f"Edit failed: Exceeds {limit} character limit (requested {requested}). Consider summarizing existing "
            f"core memories in {label} and/or moving lower priority content to archival memory to free up space "
            "in core memory, then try again.")


def _day(value: str, what: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"{what} {value!r} is not a date in YYYY-MM-DD format") from None


class Toolbox:
    """Runs one agent's function calls against its store (core blocks, recall, archival)."""

    def __init__(self, store: AgentStore, agent_id: int, options: AgentOptions, archive: Archive,
                 now: Callable[[], str]) -> None:
        self.store = store
        self.agent_id = agent_id
        self.options = options
        self.archive = archive
        self.now = now
        self.found: list[Citation] = []  # the passages and messages the last call's search returned (evidence)
        self.cause = "agent"  # what the running call's writes are recorded as (a core-memory version's cause)
        # the supersession check of the running turn (old text, new text) -> does the new replace the old; None:
        # no check (supersede_check off, or no turn: an API insert)
        self.judge: Callable[[str, str], bool] | None = None
        # the last event before the running turn: recall search never returns the turn's own messages (the question
        # just asked, the agent's "Searching for..." thought); None: no turn
        self.turn_start: int | None = None
        self.user_said: str | None = None  # the running turn's user message (a fact of theirs is not the persona's)

    def run(self, name: str, args: dict[str, Any], cause: str | None = None) -> str:
        """Execute a validated call (``request_heartbeat`` already removed); returns the result message. What a
        search returned is left in :attr:`found` (whole passages and messages, as citations of their own text);
        ``cause``: what its writes are recorded as (default ``agent: NAME``)."""
        if name not in SPECS:
            raise ToolError(f"No function named {name}")
        self.found = []
        self.cause = cause or f"agent: {name}"
        return getattr(self, name)(**args)

    # --- messaging ---------------------------------------------------------------------------------
    @function(terminal=True)
    def send_message(self, message: Annotated[str, text(600)]) -> str:
        return "Sent message successfully."

    # --- core memory -------------------------------------------------------------------------------
    def _block(self, label: str) -> Block:
        blocks = {b.label: b for b in self.store.blocks(self.agent_id)}
        if label not in blocks:
            raise ToolError(f"No core memory block named {label!r} (have: {', '.join(blocks)})")
        return blocks[label]

    def _about_the_user(self, label: str, content: str) -> bool:
        """Whether a persona write copies what the user said about themselves ("I live in York." from the user's
        "I live in York", in this turn or in the messages still in context): a fact that belongs in the human block
        (when the agent has one)."""
        if label != "persona" or not self.user_said or "human" not in {b.label for b in self.store.blocks(
                self.agent_id)}:
            return False
        from ..text.words import keywords, sentences

        earlier = " ".join(e.payload.get("message", "") for e in self.store.queue(self.agent_id)
                           if e.kind == "user_message")  # what the user said that the agent still sees
        written = keywords(content)
        if len(written) < 2 or not _FIRST_PERSON.search(content):
            return False
        # the user's sentences about themselves: "From now on your name is Max." tells the agent of itself
        said = keywords(" ".join(s for s in sentences(f"{self.user_said} {earlier}") if _FIRST_PERSON.search(s)))
        return len(written & said) >= 0.8 * len(written)

    def _write(self, block: Block, value: str) -> str:
        if len(value) > block.limit:
            raise ToolError(over_limit(block.label, block.limit, len(value)))
        self.store.put_block(self.agent_id, replace(block, value=value), self.cause)
        return f"Core memory {block.label} updated ({len(value)}/{block.limit} characters)."

    @function
    def core_memory_append(self, label: Label, content: Annotated[str, text(400)]) -> str:
        if not content.strip():
            raise ToolError("content is empty: nothing to append")
        moved = self._about_the_user(label, content)  # the user's own words about themselves: the human block's
        if moved:
            label, content = "human", f"The user said: {content.strip()}"
        block = self._block(label)
        if content.strip() in block.value:  # small models repeat a save in a loop: say it is done
            raise ToolError(f"Already in core memory ({label}): nothing added. It is saved; carry on, e.g. "
                            "reply to the user with send_message.")
        written = self._write(block, f"{block.value}\n{content}" if block.value else content)
        if moved:
            return (f"{written} Saved in the human block, not persona: it is what the user said about themselves "
                    "(persona is who you are).")
        return written

    @function
    def core_memory_replace(self, label: Label, old_content: Annotated[str, text(400)],
                            new_content: Annotated[str, text(400, min_length=0)]) -> str:
        block = self._block(label)
        if not old_content:
            raise ToolError("old_content is empty: give the exact text to replace")
        if old_content not in block.value:
            raise ToolError(f"Edit failed: old_content not found in {label} (it must match the block text exactly)")
        if self._about_the_user(label, new_content):
            raise ToolError("Not written: this is what the user said about themselves, and persona is who you are. "
                            "Save facts about the user in the human block (core_memory_append(label='human', ...)).")
        return self._write(block, block.value.replace(old_content, new_content, 1))

    # --- recall storage ----------------------------------------------------------------------------
    def _page(self, page: int) -> int:
        if page < 0:
            raise ToolError(f"page must be 0 or more, not {page}")
        return page

    @function
    def conversation_search(self, query: Annotated[str, text(100)], page: PageNumber) -> str:
        total, found = self.recall_events(query, page)
        # what the user said is evidence; the agent's own thoughts and the system's alerts are not sources
        self.found = [message_citation(e) for e in found if e.kind == "user_message"]
        return SearchPage(tuple(e.describe() for e in found), total, page, self.options.page_size).render()

    def recall_page(self, query: str, page: int) -> SearchPage:
        """One page of the recall search conversation_search shows."""
        total, found = self.recall_events(query, page)
        return SearchPage(tuple(e.describe() for e in found), total, page, self.options.page_size)

    def recall_events(self, query: str, page: int, size: int | None = None) -> tuple[int, list[Event]]:
        """(how many messages match, the messages of page ``page``) of a recall search, ``size`` a page (the
        agent's page size unless given)."""
        size = size or self.options.page_size
        offset = self._page(page) * size
        if self.options.recall_search == "text":
            total, found = self.store.search_events(self.agent_id, query=query, offset=offset, limit=size)
            mine = [e for e in found if self.turn_start is not None and e.seq > self.turn_start]
            return total - len(mine), [e for e in found if e not in mine]  # never the running turn's own messages
        ranked = self.rank_recall(query)
        return len(ranked), self.store.events(self.agent_id, ranked[offset:offset + size])

    def rank_recall(self, query: str) -> list[int]:
        """Message seqs: those containing ``query`` first (oldest first), then the rest ranked as OP-RAG ranks
        fragments, by :func:`rank_messages`: BM25 over the messages' stemmed content words (a rare word, a place or
        a name, outweighs common ones) and MiniLM similarity where the encoder is installed (a paraphrase: "went
        camping" for "trip to the woods"). Small models search with whole phrases that rarely occur verbatim."""
        from ..text.when import anchored

        # a message's date and the dates its relative words stand for are searchable ("19 January 2023" finds
        # "I lost my job yesterday" said the day after)
        events = [(seq, text, time) for seq, text, time in self.store.event_texts(self.agent_id)
                  if self.turn_start is None or seq <= self.turn_start]  # never the running turn's own messages
        texts = [f"{anchored(text, time)} {spoken_date(time)}" for _, text, time in events]
        if not texts:
            return []
        needle = query.lower()
        exact = [k for k, text in enumerate(texts) if needle in text.lower()]
        # every message ranked (an exact match lends its neighbours its score too), the exact matches then first
        order = rank_messages(query, texts, self.archive.similarities(query, texts),
                              in_exchange([time for _, _, time in events]))
        seen = set(exact)
        return [events[k][0] for k in exact] + [events[i][0] for i in order if i not in seen]

    @function
    def conversation_search_date(self, start_date: Day, end_date: Day, page: PageNumber) -> str:
        start, end = _day(start_date, "start_date"), _day(end_date, "end_date")
        if end < start:
            raise ToolError(f"end_date {end_date} is before start_date {start_date}")
        size = self.options.page_size
        total, found = self.store.search_events(
            self.agent_id, start=start.isoformat(), end=(end + timedelta(days=1)).isoformat(),
            offset=self._page(page) * size, limit=size)
        self.found = [message_citation(e) for e in found]
        return SearchPage(tuple(e.describe() for e in found), total, page, size).render()

    # --- archival storage --------------------------------------------------------------------------
    @function
    def archival_memory_insert(self, content: Annotated[str, text(600)]) -> str:
        if not content.strip():
            raise ToolError("content is empty: nothing to insert")
        added = self.archive.add(content, self.now(), judge=self.judge)
        if not added.stored:  # a repeat is not stored again: the agent hears that it knows it
            return f"Already in archival memory (saved {added.passage.time[:16]}): not stored again."
        if added.replaced:
            old = added.replaced[0]
            return f"Inserted into archival memory; it replaces the passage saved {old.time[:16]}: {old.text[:120]!r}."
        return "Inserted into archival memory."

    @function
    def archival_memory_replace(self, old_content: Annotated[str, text(200)],
                                new_content: Annotated[str, text(600)]) -> str:
        if not new_content.strip():
            raise ToolError("new_content is empty: give the fact that holds now")
        found = self.archive.find(old_content)
        if found is None:
            raise ToolError(f"No archival passage matches old_content {old_content[:80]!r}: search archival memory "
                            "for the earlier fact, or save the new one with archival_memory_insert")
        added = self.archive.add(new_content, self.now(), replaces=found)
        if not added.stored:
            return f"Already in archival memory (saved {added.passage.time[:16]}): not stored again."
        return f'Inserted into archival memory; it replaces the earlier "{found.text[:120]}" (kept, marked replaced).'

    @function
    def archival_memory_search(self, query: Annotated[str, text(100)], page: PageNumber) -> str:
        total, found = self.archive.search_passages(query, self._page(page))
        self.found = [passage_citation(p) for p in found]
        return SearchPage(tuple(p.describe() for p in found), total, page, self.options.page_size).render()


FUNCTIONS: tuple[FunctionSpec, ...] = tuple(spec_of(m) for m in vars(Toolbox).values() if hasattr(m, _TERMINAL))
SPECS = {f.name: f for f in FUNCTIONS}


# A message with no word of the query is still found when MiniLM puts it this close: "camping trip" / "We pitched a tent
# by the lake" 0.47, "what instrument does she play" / "I have been practising the violin" 0.40, unrelated chat below
# 0.1. On LoCoMo words match about 437 of some 580 turns a question (the speakers names are in most); the floor lets
# in about one more: benchmarks/recall_search.py measures the fusion; this floor acts only where words fail.
RECALL_NEAR = 0.35
# "I" as written; "my", "me", "mine", and "My", "Me", "Mine" opening a sentence ("...about me: My locker code is
# 4417."), not "Portland, ME"
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|my|me|mine)\b|(?:^|(?<=[.!?:]\s))(?:My|Me|Mine)\b")


def spoken_date(time: str) -> str:
    """A message's date as people write it, so a recall search for "May 2023" or "8 May 2023" finds what was said
    then (the agent clock's ``2023-05-08 13:56:00`` as ``8 May 2023``); empty for a time of another form."""
    from ..text.when import day_of, spoken

    day = day_of(time)
    return "" if day is None else spoken(day)


# of its best neighbour's score a message adds (LoCoMo's first page with evidence 0.649 -> 0.691; 0.25: 0.676; 1: 0.624)
NEIGHBOUR_SHARE = 0.5


EXCHANGE_GAP = 3600  # seconds between two messages of one exchange at most


def in_exchange(times: Sequence[str]) -> list[bool]:
    """Whether each message (oldest first, by its stored time) continues the exchange of the one before it: said
    within :data:`EXCHANGE_GAP` of it (a LoCoMo session's turns; a user's message and the agent's step after it; not
    the next session days later). A time that does not parse links to nothing."""
    from datetime import datetime

    def parsed(value: str) -> datetime | None:
        try:
            return datetime.fromisoformat(str(value))
        except ValueError:
            return None

    at = [parsed(t) for t in times]
    out = [False] * len(at)
    for i in range(1, len(at)):
        a, b = at[i - 1], at[i]
        if a is not None and b is not None and a.tzinfo == b.tzinfo:
            out[i] = abs((b - a).total_seconds()) <= EXCHANGE_GAP
    return out


def rank_messages(query: str, texts: Sequence[str], similar: Sequence[float] | None = None,
                  together: Sequence[bool] | None = None) -> list[int]:
    """Indices of ``texts`` that match ``query``, best first: BM25 over stemmed content words, fused with
    ``similar`` (MiniLM cosine of each text to the query) where given, as a sum of the two min-max normalised (the
    retrieval layer's ``mix``); a text matches when it shares a content word with the query or its similarity
    reaches :data:`RECALL_NEAR`. ``together[i]``: text ``i`` continues the exchange of text ``i - 1``
    (:func:`in_exchange`) — then a match also scores :data:`NEIGHBOUR_SHARE` of its best matching neighbour's score:
    "I play shooting guard" beside "I signed with the Wolves" ranks above "I play chess" (FragRel's context relation,
    on messages). A message with nothing of the query still does not match."""
    from ..text.words import terms

    wanted = terms(query)
    held = [terms(text) for text in texts]  # each message's terms, taken once for both rankings
    shared = [len(wanted & h) for h in held]
    try:
        import numpy as np

        from ..retrieval.scorers import BM25, mix

        lookup = dict(zip(texts, held))
        bm25 = BM25(list(texts), tokenize=lambda t: sorted(lookup[t] if t in lookup else terms(t))).scores(
            " ".join(sorted(wanted)))
    except (ImportError, ConfigError):  # the retrieval extra is not installed: keyword counts rank alone
        return [i for _, i in sorted((-n, i) for i, n in enumerate(shared) if n)]
    bm25 = np.where(np.asarray(shared) > 0, bm25, 0.0)
    if similar is None:
        fused, matched = bm25, [bool(n) for n in shared]
    else:
        near = np.asarray(similar, dtype=float)
        fused = mix([bm25, near])  # min-max normalised and summed: first-page evidence 0.65 vs RRF's 0.56, BM25's 0.59
        matched = [bool(shared[i]) or near[i] >= RECALL_NEAR for i in range(len(texts))]
    score = [float(x) for x in fused]
    if together is not None:  # each match read beside its neighbours in the exchange
        own = [score[i] if matched[i] else 0.0 for i in range(len(texts))]
        score = [own[i] + NEIGHBOUR_SHARE * max(
            [own[j] for j in (i - 1, i + 1) if 0 <= j < len(texts) and together[max(i, j)]], default=0.0)
            for i in range(len(texts))]
    return sorted((i for i in range(len(texts)) if matched[i]), key=lambda i: (-score[i], i))
