"""Main context: the prompt of one step and its token count.

Layout (prefix-friendly for llama.cpp's KV reuse): the system message holds the read-only instructions
and the core-memory blocks (it changes only when a block is edited); then the FIFO queue, the summary
note at its head; the memory counts go at the very end, so the prompt of the next step starts with the
prompt of this one. Consecutive user-role events (a result and its heartbeat) share one chat message.

A turn (:class:`~pagemind.agent.turn.Turn`) makes one :class:`MainContext` per step; what does not fit is
evicted by the turn (the one place the queue is flushed and summarised).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError, MessageTooLarge
from ..llm.base import Constraint, LLMRequest, Message, Tool
from ..llm.client import LLM
from ..prompts import get_prompt
from .actions import step_grammar, step_schema, step_tools
from .functions import FUNCTIONS, SPECS, FunctionSpec
from .memory import AgentOptions, Block, Event
from .store import AgentStore

PAPER_WINDOW = 8192  # GPT-4's window in the paper; the default agent window is min(model window, this)


def prompt(name: str, /, **values: object) -> str:
    return get_prompt("memgpt", name).render(**values)


@dataclass(frozen=True)
class Prepared:
    request: LLMRequest
    tokens: int  # prompt tokens (the model's own count when it has a tokenizer)


class MainContext:
    """Builds the step requests of one agent: what its window holds, how many tokens that is, and whether the
    reply still fits beside it."""

    def __init__(self, llm: LLM, store: AgentStore, agent_id: int, options: AgentOptions,
                 now: Callable[[], str], tools_refused: bool = False) -> None:
        self.llm = llm
        self.store = store
        self.agent_id = agent_id
        self.options = options
        self.now = now
        self.tools_refused = tools_refused  # the server refused native tool calls (the agent's state, or this step)

    @property
    def window(self) -> int:
        wanted = self.options.context_window or PAPER_WINDOW
        return min(wanted, self.llm.context_window)

    @property
    def warning_tokens(self) -> int:
        """Prompt tokens beyond which the memory-pressure warning is due."""
        return int(self.options.warning_fraction * self.window)

    def fits(self, prepared: Prepared) -> bool:
        return prepared.tokens + self.options.max_tokens <= self.window

    # --- the prompt --------------------------------------------------------------------------------
    @property
    def native_tools(self) -> bool:
        """Whether steps are native tool calls: ``tool_calling`` auto/native on a backend that has them, unless
        the server refused them (then auto falls back to JSON replies, recorded in the agent's state)."""
        if self.options.tool_calling == "json" or self.tools_refused:
            return False
        if not self.llm.backend.capabilities.supports_tools:
            if self.options.tool_calling == "native":
                raise ConfigError(f"{self.llm.model_id} has no native tool calling (use --tool-calling auto or json)")
            return False
        return True

    def system_text(self, blocks: list[Block]) -> str:
        reply_format = prompt("reply_format_tools" if self.native_tools else "reply_format_json")
        parts = {"functions": prompt("functions", functions=FUNCTIONS), "reply_format": reply_format,
                 "core_memory": "\n".join(b.render() for b in blocks)}
        if self.options.system is not None:
            return prompt("system_own", instructions=self.options.system, **parts)
        return prompt("system", **parts)

    def tools(self, blocks: list[Block], functions: Sequence[FunctionSpec] = FUNCTIONS) -> tuple[Tool, ...]:
        if not self.native_tools:
            return ()
        return step_tools([b.label for b in blocks], self.options.max_tokens, functions)

    def constraint(self, blocks: list[Block], functions: Sequence[FunctionSpec] = FUNCTIONS) -> Constraint | None:
        caps = self.llm.backend.capabilities
        enforced = caps.supports_grammar or caps.supports_json_schema
        if self.native_tools or not self.options.constrained or not enforced:
            return None
        labels = [b.label for b in blocks]
        budget = self.options.max_tokens
        return Constraint(name="memgpt_step", gbnf=step_grammar(labels, budget, functions),
                          json_schema=step_schema(labels, budget, functions))

    def build(self, last_step: bool = False) -> Prepared:
        """The next step's request; on a turn's ``last_step`` the only function offered is send_message."""
        blocks = self.store.blocks(self.agent_id)
        messages = [Message("system", self.system_text(blocks))]
        for event in self.store.queue(self.agent_id):
            text = event.render()
            if event.role == "user" and messages[-1].role == "user":
                messages[-1] = Message("user", f"{messages[-1].content}\n{text}")
            else:
                messages.append(Message(event.role, text))  # type: ignore[arg-type]
        status = prompt("memory_status", recall=self.store.count_events(self.agent_id),
                        archival=self.store.count_passages(self.agent_id))
        if messages[-1].role == "user":
            messages[-1] = Message("user", f"{messages[-1].content}\n{status}")
        else:
            messages.append(Message("user", status))
        functions = (SPECS["send_message"],) if last_step else FUNCTIONS
        request = LLMRequest(messages=tuple(messages), role="agent-step", max_tokens=self.options.max_tokens,
                             constraint=self.constraint(blocks, functions), tools=self.tools(blocks, functions))
        return Prepared(request, self.llm.prompt_tokens(request))

    def check_message(self, text: str, now: str) -> None:
        """Refuse (:class:`MessageTooLarge`) a user message that would not fit the window even with every other
        message evicted: the system prompt, core memory, the message itself and the room for the reply. Counted
        on at most 16 characters a token of the window, so a huge message is not tokenised whole; a message of at
        most an eighth of the window in bytes (a token is at least a byte) is let through without counting (if the
        fixed part alone leaves no room for it, no message fits and the turn says so)."""
        if len(text.encode("utf-8")) <= self.window // 8:  # tokens <= bytes: a short message is never the reason
            return
        head = text[: 16 * self.window]
        blocks = self.store.blocks(self.agent_id)
        system = Message("system", self.system_text(blocks))

        def needed(*messages: Message) -> int:
            request = LLMRequest(messages=(system, *messages), role="agent-step", max_tokens=self.options.max_tokens,
                                 tools=self.tools(blocks))
            return self.llm.prompt_tokens(request) + self.options.max_tokens

        if needed(Message("user", Event("user_message", {"message": ""}, now).render())) > self.window:
            return  # no message fits: the turn says so (the window is too small for the agent itself)
        event = Event("user_message", {"message": head}, now)
        if needed(Message("user", event.render())) > self.window or len(head) < len(text):
            raise MessageTooLarge(f"the message ({len(text):,} characters) does not fit the agent's window of "
                                  f"{self.window:,} tokens beside its system prompt and core memory; send it in "
                                  f"parts or insert it into archival memory")
