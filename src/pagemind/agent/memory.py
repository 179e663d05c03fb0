"""MemGPT's memory as plain values: agent options, core-memory blocks, queue/recall events, search pages.

Nothing here knows about SQL or the LLM. Events render themselves into the text the processor reads
(the paper's event JSON: ``{"type": "user_message", "message": ..., "time": ...}``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, ClassVar

from ..errors import ConfigError

PAPER_WARNING_FRACTION = 7000 / 8192  # MESSAGE_SUMMARY_WARNING_TOKENS of GPT-4's 8k window (paper code)
SEARCH_KINDS = ("user_message", "step")  # what recall search sees (paper: not system or function messages)


@dataclass(frozen=True)
class AgentOptions:
    """Per-agent settings, stored with the agent (paper defaults noted)."""

    context_window: int | None = None  # tokens the agent may use; None: min(model window, 8192) as in the paper
    warning_fraction: float = PAPER_WARNING_FRACTION  # memory-pressure warning (paper: 7000 of 8192 tokens)
    evict_fraction: float = 0.5  # share of the queue evicted on overflow (paper MESSAGE_SUMMARY_CUTOFF_FRAC)
    keep_last: int = 3  # messages never evicted (Letta 0.6.5 MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST)
    block_limit: int = 2000  # characters per core block (paper CORE_MEMORY_*_CHAR_LIMIT)
    page_size: int = 5  # search results per page (paper: 5)
    max_steps: int = 8  # LLM steps per user turn before the turn is cut short
    final_reply: bool = True  # the last of max_steps may only call send_message, so a cut-short turn still answers
    archival_search: str = "hybrid"  # text | semantic | hybrid (exact text matches first, then semantic)
    recall_search: str = "hybrid"  # text (paper: substring only) | hybrid (substring matches, then keyword overlap)
    embedder: str = "auto"  # auto (MiniLM if installed, else keywords) | minilm | hashing | none
    constrained: bool = True  # enforce the step format with a grammar / JSON schema where the backend can
    tool_calling: str = "auto"  # auto: native tool calls where the backend has them, else constrained replies;
    #                             native: tool calls only; json: never tool calls (grammar / JSON schema / parser)
    max_tokens: int = 1000  # reply tokens per step; constrained replies are bounded to fit (actions.bounds)
    summary_words: int = 100  # recursive-summary length (paper WORD_LIMIT)
    result_chars: int = 3000  # function results longer than this are cut (search pages are sized by page_size)

    # The allowed values, declared once: checked here and published in the HTTP and MCP schemas
    # (pagemind.server.shapes.agent_options_schema).
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "archival_search": ("text", "semantic", "hybrid"), "recall_search": ("text", "hybrid"),
        "tool_calling": ("auto", "native", "json"), "embedder": ("auto", "minilm", "hashing", "none")}
    BOUNDS: ClassVar[dict[str, tuple[int, int]]] = {  # inclusive
        "context_window": (64, 10_000_000), "keep_last": (0, 10_000), "block_limit": (1, 1_000_000),
        "page_size": (1, 1_000), "max_steps": (1, 1_000), "max_tokens": (1, 1_000_000),
        "summary_words": (1, 100_000), "result_chars": (1, 10_000_000)}
    FRACTIONS: ClassVar[dict[str, bool]] = {"warning_fraction": True, "evict_fraction": False}  # in (0, 1]: 1 too?

    def __post_init__(self) -> None:
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                                  f"not {getattr(self, name)!r}")
        for name, (low, high) in self.BOUNDS.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ConfigError(f"{name} must be from {low:,} to {high:,}, not {value!r}")
        for name, one in self.FRACTIONS.items():
            value = getattr(self, name)
            if not (0 < value <= 1 if one else 0 < value < 1):
                raise ConfigError(f"{name} must be in (0, {'1]' if one else '1)'}, not {value!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentOptions:
        known = {f.name for f in fields(cls)}
        bad = set(data) - known
        if bad:
            raise ConfigError(f"unknown agent option(s): {', '.join(sorted(bad))}")
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def updated(self, **changes: Any) -> AgentOptions:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True)
class Block:
    """One core-memory block: always in context, editable by the agent within ``limit`` characters."""

    label: str
    value: str
    limit: int

    def render(self) -> str:
        return f'<{self.label} characters="{len(self.value)}/{self.limit}">\n{self.value}\n</{self.label}>'


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
            said = p["arguments"].get("message") if p.get("function") == "send_message" else None
            return f'{p["thoughts"]} {said}'.strip() if said else p["thoughts"]
        return str(p.get("message") or p.get("reason") or "")

    def describe(self) -> str:
        """One line for search results and the CLI: ``[time] role: text``."""
        who = {"user_message": "user", "step": "assistant"}.get(self.kind, self.kind)
        return f"[{self.time[:16]}] {who}: {self.search_text()}"


@dataclass(frozen=True)
class Passage:
    """One archival-storage item (a fact the agent saved, or a piece of an uploaded document)."""

    id: int
    text: str
    time: str
    summary: str | None = None
    source: str | None = None

    def describe(self) -> str:
        gist = f"(gist: {self.summary}) " if self.summary else ""
        return f"[{self.time[:16]}] {gist}{self.text}"


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
