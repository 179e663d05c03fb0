"""MemGPT's memory as plain values: agent options, core-memory blocks, queue/recall events, search pages.

Nothing here knows about SQL or the LLM. Events render themselves into the text the processor reads
(the paper's event JSON: ``{"type": "user_message", "message": ..., "time": ...}``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal

from ..declare import Options, option
from ..limits import MAX_BLOCK

PAPER_WARNING_FRACTION = 7000 / 8192  # MESSAGE_SUMMARY_WARNING_TOKENS of GPT-4's 8k window (paper code)
CLOCK = "%Y-%m-%d %H:%M:%S"  # the agent clock's format: every event's time, and what recall's date search reads
SEARCH_KINDS = ("user_message", "step")  # what recall search sees (paper: not system or function messages)


RecallOrder = Literal["recent", "rank"]  # AgentOptions.recall_order's values


@dataclass(frozen=True)
class AgentOptions(Options):
    """Per-agent settings, stored with the agent (paper defaults noted). Declared once, as the methods' options
    are (:func:`~pagemind.methods.options.option`): checked however they are made (here, from the store, the CLI,
    HTTP or MCP), and the CLI flags, the HTTP and MCP schemas are generated from these declarations."""

    owner: ClassVar[str] = "agent"

    context_window: int | None = option(
        None, "tokens of the agent's main context (its virtual context); none: min(model window, 8192) as in the "
        "paper", minimum=64, maximum=10_000_000, flag="--agent-window")
    warning_fraction: float = option(
        PAPER_WARNING_FRACTION, "share of the window at which the memory-pressure warning is sent (paper: 7000 of "
        "8192 tokens)", above=0, maximum=1)
    evict_fraction: float = option(
        0.5, "share of the queue evicted when it overflows (paper MESSAGE_SUMMARY_CUTOFF_FRAC)", above=0, below=1)
    keep_last: int = option(3, "messages never evicted (Letta MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST)",
                            minimum=0, maximum=10_000)
    block_limit: int = option(2000, "characters per core-memory block (paper CORE_MEMORY_*_CHAR_LIMIT)",
                              minimum=1, maximum=MAX_BLOCK)
    page_size: int = option(5, "search results per page (paper: 5)", minimum=1, maximum=1_000)
    max_steps: int = option(8, "LLM steps per user message before the turn is cut short", minimum=1, maximum=1_000)
    search_again: int = option(
        1, "times a turn a reply to a question is held back, while at least two steps remain, when what the turn's "
           "searches returned does not support it (or it says nothing was found): the agent is told to search on "
           "(the next page, other words, the other memory) before it answers; 0: every reply is sent (the paper's)",
        minimum=0, maximum=100)
    final_reply: bool = option(True, "the last of max_steps may only call send_message, so a cut-short turn still "
                                     "answers")
    supersede_check: bool = option(
        False, "before an archival insert, ask the model whether the new fact replaces a stored one about the same "
               "subject (one short yes/no call per similar passage, at most two: MiniLM cosine 0.35-0.85 and a "
               "shared word): a yes marks the earlier passage superseded, as archival_memory_replace does")
    consolidate_idle: int = option(
        0, "minutes without a new message after which `pagemind serve` (or `agent memory consolidate --watch`) "
           "consolidates the agent's memory in the background: a dated summary, facts and human-block lines from "
           "what was said since the last pass, recorded as a run (0: never)", minimum=0, maximum=7 * 24 * 60)
    archival_search: Literal["text", "semantic", "hybrid"] = option(
        "hybrid", "archival search: exact text matches then embeddings (hybrid), or one of them")
    recall_first: bool = option(
        True, "before a user message is answered, the recall messages and archival passages that best match it go in "
              "the context as a marked, dated alert (recall_tokens at most; in recall_order), cited like search "
              "results when the reply uses them; off: the agent finds them only by searching (the paper's agent)")
    recall_answer: bool = option(
        True, "with recall_first, a question is first answered by one plain call reading what was recalled (the "
               "user's block and the last messages beside it), as OP-RAG answers from its fragments; sent as the "
               "turn's send_message step, cited and checked as one. When the recalled memories do not answer, the "
               "agent's own steps go on (they search); off: every reply is the agent's own step")
    recall_tokens: int = option(400, "tokens of what recall_first places in the context, at most (the best "
                                     "matches first; never past the window's room below the memory-pressure warning)",
                                minimum=1, maximum=100_000)
    recall_order: RecallOrder = option(
        "recent", "the order recall_first shows the best matches it chose, each line dated: the most recent first "
                  "(recent: a later fact above the one it may replace) or the best match first (rank)")
    recall_search: Literal["text", "hybrid"] = option(
        "hybrid", "conversation search: substring matches, then the rest ranked by BM25 and MiniLM (as OP-RAG; "
        "hybrid), or substring only (text, the paper's)")
    embedder: Literal["auto", "minilm", "hashing", "none"] = option(
        "auto", "archival and recall embeddings (auto: MiniLM if installed, else keyword ranking)")
    constrained: bool = option(True, "enforce the step format with a grammar / JSON schema where the backend can",
                               flag="--constrained/--unconstrained")
    tool_calling: Literal["auto", "native", "json"] = option(
        "auto", "steps as native tool calls where the backend has them (auto), always (native), or as JSON replies "
        "constrained by grammar / schema (json)")
    max_tokens: int = option(1000, "reply tokens per step (constrained replies are bounded to fit)",
                             minimum=1, maximum=1_000_000)
    summary_words: int = option(100, "words of the recursive summary of evicted messages (paper WORD_LIMIT)",
                                minimum=1, maximum=100_000)
    system: str | None = option(
        None, "the agent's own instructions in place of the MemGPT system prompt's (pagemind still appends its reply "
        "format, functions and core memory); an imported Letta agent's system prompt", maximum=100_000)
    result_chars: int = option(3000, "function results longer than this are cut (search pages are sized by "
                                     "page_size)", minimum=1, maximum=10_000_000)

    def __post_init__(self) -> None:
        for spec in self.specs():  # the values as their declared types, or a ConfigError naming the option
            object.__setattr__(self, spec.name, spec.coerce(getattr(self, spec.name), self.owner))

    # options added after agents were stored, and the value an agent stored without one keeps: what it did when it
    # was made (a new agent takes the declared default)
    ADDED_SINCE: ClassVar[dict[str, Any]] = {"recall_answer": False}

    @classmethod
    def stored(cls, data: dict[str, Any]) -> AgentOptions:
        """An agent's options as stored (the store, a pagemind Agent File): an option added since it was stored is
        :data:`ADDED_SINCE`'s value, not the new default, so an agent behaves after an upgrade as before it."""
        return cls.create(**{**cls.ADDED_SINCE, **data}) if data else cls.create()

    def updated(self, **changes: Any) -> AgentOptions:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True)
class Block:
    """One core-memory block: always in context, editable by the agent within ``limit`` characters."""

    label: str
    value: str
    limit: int
    description: str = ""  # what the block is for (Letta's; shown to clients, not in the agent's prompt)

    def render(self) -> str:
        return f'<{self.label} characters="{len(self.value)}/{self.limit}">\n{self.value}\n</{self.label}>'


@dataclass(frozen=True)
class BlockVersion:
    """One version of a core-memory block: the block as a write made it, the write's cause and its time."""

    block: Block
    version: int
    cause: str
    time: float

    def diff(self, previous: BlockVersion | None) -> str:
        """What this version changed from ``previous`` (the version before it of the same block), as a unified
        diff of lines; every line added when there is none."""
        import difflib

        before = previous.block.value.splitlines() if previous is not None else []
        name = f"v{previous.version}" if previous is not None else "(none)"
        return "\n".join(difflib.unified_diff(before, self.block.value.splitlines(), name, f"v{self.version}",
                                              lineterm="", n=1))


def with_previous(versions: Sequence[BlockVersion]) -> list[tuple[BlockVersion, BlockVersion | None]]:
    """Versions (newest first, as a history lists them) each paired with the listed version before it of the same
    block (None where that is not in the list)."""
    return [(v, next((w for w in versions[i + 1:] if w.block.label == v.block.label), None))
            for i, v in enumerate(versions)]


@dataclass(frozen=True)
class Event:
    """One entry of the queue and of recall storage. ``seq`` is its place in the agent's history."""

    kind: str  # user_message | step | function_result | heartbeat | system_alert | summary
    payload: dict[str, Any]
    time: str  # "YYYY-MM-DD HH:MM:SS" (agent clock)
    seq: int = 0
    in_context: bool = True

    @property
    def role(self) -> str:
        return "assistant" if self.kind == "step" else "user"

    @property
    def is_call(self) -> bool:
        """An assistant step that named a function (its result must follow it)."""
        return self.kind == "step" and bool(self.payload.get("function"))

    def render(self) -> str:
        """The text the processor reads for this event."""
        p, t = self.payload, self.time[:16]
        if self.kind == "step":
            if "raw" in p:
                return p["raw"]
            return json.dumps({"thoughts": p["thoughts"], "function": p["function"], "arguments": p["arguments"]},
                              ensure_ascii=False)
        if self.kind == "user_message":
            return json.dumps({"type": "user_message", "message": p["message"], "time": t}, ensure_ascii=False)
        if self.kind == "function_result":
            return json.dumps({"type": "function_result", "function": p["function"], "status": p["status"],
                               "message": p["message"], "time": t}, ensure_ascii=False)
        if self.kind == "heartbeat":
            return json.dumps({"type": "heartbeat", "reason": p["reason"], "time": t}, ensure_ascii=False)
        return json.dumps({"type": "system_alert", "message": p["message"], "time": t}, ensure_ascii=False)

    def search_text(self) -> str:
        """What recall text search matches and shows: the user's words, or what the agent said and thought."""
        p = self.payload
        if self.kind == "user_message":
            return p["message"]
        if self.kind == "step":
            if "raw" in p:
                return p["raw"]
            said = p["arguments"].get("message") if p.get("function") == "send_message" and not p.get("held") else None
            return f'{p["thoughts"]} {said}'.strip() if said else p["thoughts"]
        return str(p.get("message") or p.get("reason") or "")

    def describe(self) -> str:
        """One line for search results, the recalled context and the CLI: ``[time] role: text``, a relative
        date in the text followed by the date it stands for ("yesterday (19 January 2023)")."""
        from ..text.when import anchored

        who = {"user_message": "user", "step": "assistant"}.get(self.kind, self.kind)
        return f"[{self.time[:16]}] {who}: {anchored(self.search_text(), self.time)}"


SAID_SOURCES = ("api", "letta", "mcp")  # the surfaces an outside edit of archival memory comes through


@dataclass(frozen=True)
class Passage:
    """One archival-storage item (a fact the agent saved, or a piece of an uploaded document)."""

    id: int
    text: str
    time: str
    summary: str | None = None
    source: str | None = None
    superseded_by: int | None = None  # the passage that replaced this one (None: it holds)
    superseded: str | None = None  # when it was replaced (the agent's clock)
    repeats: tuple[tuple[str, str | None], ...] = ()  # (time, source) of the times it was told again
    replaces: tuple[Passage, ...] = ()  # the passages this one superseded, when a search shows it

    @property
    def from_document(self) -> bool:
        """A passage of a loaded document (its source the document's name): its time is when it was loaded, not
        when its words were said. Said ones: the agent's own (no source), an edit from outside (``api``, ``letta``,
        ``mcp``) or a consolidation's."""
        return self.source is not None and self.source not in SAID_SOURCES and \
            not self.source.startswith("consolidation")

    def describe(self) -> str:
        from ..text.when import anchored

        gist = f"(gist: {self.summary}) " if self.summary else ""
        text = self.text if self.from_document else anchored(self.text, self.time)  # a book's "tomorrow" is its own
        now = f"[{self.time[:16]}] {gist}{text}"
        if self.superseded_by is not None:
            now += f" (superseded {str(self.superseded or '')[:16]} by passage {self.superseded_by})"
        for old in self.replaces:
            now += f' (replaces passage {old.id} of {old.time[:16]}: "{old.text[:120]}")'
        return now


@dataclass(frozen=True)
class SearchPage:
    """One page of a paginated search; page ``p`` (0-based) starts at result ``p * page_size``."""

    items: tuple[str, ...]
    total: int
    page: int
    page_size: int
    note: str = ""

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.page_size))

    def render(self) -> str:
        if self.total == 0:
            return f"No results found.{self.note}"
        if not self.items:
            return f"No results on page {self.page + 1} (there are {self.pages} pages of {self.total} results)."
        head = f"Showing {len(self.items)} of {self.total} results (page {self.page + 1}/{self.pages})"
        more = f" More: call again with page={self.page + 1}." if self.page + 1 < self.pages else ""
        return f"{head}: {json.dumps(list(self.items), ensure_ascii=False)}{more}{self.note}"


@dataclass
class AgentState:
    """Mutable bookkeeping kept with the agent (not memory the processor sees)."""

    warned: bool = False  # a pressure warning was sent since the last eviction
    evictions: int = 0
    evicted_messages: int = 0
    valid_actions: int = 0
    invalid_actions: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentState:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
