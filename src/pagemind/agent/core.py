"""The MemGPT agent: events in, steps (one LLM call, one function call each) until it yields.

A turn runs under the agent's turn lock. Each step's call is stored before it runs (write-ahead); its
side effects and its result are committed together, so a crash leaves at most a call without a result,
which the next turn answers with a synthetic "interrupted" error before it starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Callable

from ..errors import BadRequest, ConfigError, ContextWindowExceeded
from ..llm.client import LLM
from ..llm.usage import Trace, TraceEvent, Usage
from ..store import Store
from .actions import InvalidAction, parse_action, reply_text
from .archive import Archive
from .context import MainContext, Prepared, prompt
from .functions import Toolbox, ToolError
from .locks import TurnLock
from .memory import AgentOptions, AgentState, Block, Event, Passage, SearchPage
from .store import AgentRecord, AgentStore

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
LABEL = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_SEARCHES = ("conversation_search", "conversation_search_date", "archival_memory_search")
_QUOTE_CHARS = 1500  # the user's message quoted in the last-step alert, at most
_MAX_ROWS = 2**63 - 1  # what a 64-bit LIMIT holds
HISTORY_KINDS = ("user_message", "step", "function_result", "heartbeat", "system_alert", "summary")


@dataclass(frozen=True)
class Step:
    """One LLM call of a turn and what came of it."""

    thoughts: str
    function: str | None
    arguments: dict[str, Any]
    result: str
    status: str  # OK | Failed
    heartbeat: str | None  # requested | failed | warning | None (yielded)
    valid: bool  # the reply parsed into a known function with valid arguments
    reply: str
    prompt_tokens: int


@dataclass
class TurnResult:
    """What one user message led to: the messages sent to the user and every step."""

    messages: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    trace: Trace = field(default_factory=Trace)
    stop_reason: str = "yield"  # yield | last_step (answered on the forced last step) | max_steps
    evictions: int = 0
    warnings: int = 0
    run_id: str | None = None  # the recorded run of this turn (Pagemind.send), if recorded

    @property
    def usage(self) -> Usage:
        return self.trace.usage

    @property
    def valid_actions(self) -> int:
        return sum(s.valid for s in self.steps)

    @property
    def invalid_actions(self) -> int:
        return len(self.steps) - self.valid_actions

    @property
    def valid_action_rate(self) -> float:
        return self.valid_actions / len(self.steps) if self.steps else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "stop_reason": self.stop_reason, "evictions": self.evictions,
                "warnings": self.warnings, "valid_actions": self.valid_actions,
                "invalid_actions": self.invalid_actions, "usage": self.usage.as_dict(),
                "steps": [s.__dict__ for s in self.steps], **({"run_id": self.run_id} if self.run_id else {})}


def step_record(step: Step) -> dict[str, Any]:
    """A step as a run records it: what the agent thought, called and got (the raw reply left out: it is on the
    step's LLM call)."""
    return {k: v for k, v in step.__dict__.items() if k != "reply"}


class Agent:
    """A persistent MemGPT agent in a pagemind store. ``llm`` may be None for reading its memory only."""

    def __init__(self, llm: LLM | None, store: Store | AgentStore, record: AgentRecord, *, embedder: Any = "auto",
                 clock: Callable[[], datetime] | None = None, lock_timeout: float = 120.0,
                 stale_after: float = 900.0) -> None:
        self.store = store if isinstance(store, AgentStore) else AgentStore(store)
        self._progress: Callable[[str, int, int, str], None] | None = None
        self._on_step: Callable[[Step], None] | None = None
        self.record = record
        self.id, self.name, self.options = record.id, record.name, record.options
        self.state = record.state
        self._llm = llm
        self.clock = clock or datetime.now
        self._embedder = embedder
        self.archive = Archive(self.store, self.id, self.options, embedder)
        self.tools = Toolbox(self.store, self.id, self.options, self.archive, self.now)
        self.lock = TurnLock(self.store, self.id, timeout=lock_timeout, stale_after=stale_after)

    # --- creation and loading ----------------------------------------------------------------------
    @classmethod
    def create(cls, llm: LLM | None, store: Store | AgentStore, name: str, *, persona: str | None = None,
               human: str | None = None, blocks: dict[str, str] | None = None,
               options: AgentOptions | None = None, display_name: str | None = None, **kwargs: Any) -> Agent:
        """A new agent with persona and human blocks (plus ``blocks`` by label) and the boot messages.
        ``display_name``: what the default persona calls the agent when its stored name is namespaced (a
        server's agents are stored per user)."""
        if not NAME.match(name):
            raise ConfigError(f"agent name {name!r}: use letters, digits, '_', '.', '-' (at most 64)")
        options = options or AgentOptions()
        default_persona = prompt("persona", name=display_name or name)  # the agent's own name, never a fixed one
        values = {"persona": default_persona if persona is None else persona, "human": human or "", **(blocks or {})}
        for label, value in values.items():
            if not LABEL.match(label):
                raise ConfigError(f"block label {label!r}: use lowercase letters, digits and '_'")
            if len(value) > options.block_limit:
                raise ConfigError(f"block {label}: {len(value)} characters exceed the limit of {options.block_limit}")
        astore = store if isinstance(store, AgentStore) else AgentStore(store)
        record = astore.create_agent(name, options, [Block(k, v, options.block_limit) for k, v in values.items()])
        agent = cls(llm, astore, record, **kwargs)
        boot = {"thoughts": prompt("boot_thoughts"), "function": "send_message",
                "arguments": {"message": prompt("boot_message")}}
        now = agent.now()
        astore.append(record.id, [
            Event("step", boot, now),
            Event("function_result", {"function": "send_message", "status": "OK",
                                      "message": "Sent message successfully."}, now),
            Event("system_alert", {"message": prompt("login")}, now),
        ])
        return agent

    @classmethod
    def load(cls, llm: LLM | None, store: Store | AgentStore, name: str, **kwargs: Any) -> Agent:
        astore = store if isinstance(store, AgentStore) else AgentStore(store)
        return cls(llm, astore, astore.get_agent(name), **kwargs)

    @property
    def llm(self) -> LLM:
        if self._llm is None:
            raise ConfigError("this agent was opened without an LLM")
        return self._llm

    @property
    def context(self) -> MainContext:
        return MainContext(self.llm, self.store, self.id, self.options, self.now,
                           tools_refused=bool(self.state.extra.get("tools_refused")))

    def now(self) -> str:
        return self.clock().strftime("%Y-%m-%d %H:%M:%S")

    # --- reading -----------------------------------------------------------------------------------
    def blocks(self) -> list[Block]:
        return self.store.blocks(self.id)

    def counts(self) -> dict[str, int]:
        return {"recall": self.store.count_events(self.id), "in_context": self.store.count_events(self.id, True),
                "archival": self.store.count_passages(self.id)}

    def history(self, offset: int = 0, limit: int = 50) -> tuple[int, list[Event]]:
        """(every event in recall, the events ``offset`` .. ``offset + limit`` of them, oldest first): messages,
        steps, function results, heartbeats, alerts and summaries."""
        total, rows = self.store.store.search_agent_events(self.id, HISTORY_KINDS, offset=offset, limit=limit)
        return total, [Event(r.kind, r.payload, r.created, r.seq, r.in_context) for r in rows]

    def passages(self, query: str = "", offset: int = 0, limit: int = 20) -> tuple[int, list[Passage]]:
        """(how many passages match, the ``offset`` .. ``offset + limit`` of them) of archival memory: ranked by
        the agent's archival search for ``query``, or every passage in order without one."""
        if not query:
            return self.store.search_passages_text(self.id, "", offset, limit)
        total, ranked = self.archive.ranked(query, min(offset + limit, _MAX_ROWS))
        return total, self.store.passages(self.id, ranked[offset:offset + limit])

    def lock_holder(self) -> tuple[str, int, str, float] | None:
        """Who holds the turn lock (owner, pid, host, last refreshed), None when it is free: a turn is running
        (or its process died and the lock is not yet taken over)."""
        return self.store.lock_holder(self.id)

    def search(self, query: str, page: int = 0) -> str:
        """Recall text search, as the agent's conversation_search shows it."""
        return self.tools.conversation_search(query, page)

    def search_memory(self, query: str, page: int = 0) -> dict[str, SearchPage]:
        """One page of recall and one of archival search for ``query``, by store (what ``/search`` shows)."""
        return {"recall": self.tools.recall_page(query, page), "archival": self.archive.search(query, page)}

    # --- editing ---------------------------------------------------------------------------------------
    def set_block(self, label: str, value: str) -> Block:
        """Set core-memory block ``label`` (a new one takes the default ``block_limit``), under the turn lock so
        it never lands inside a turn; :class:`ConfigError` when the value exceeds the block's limit."""
        limit = next((b.limit for b in self.blocks() if b.label == label), self.options.block_limit)
        if len(value) > limit:
            raise ConfigError(f"block {label}: {len(value)} characters exceed its limit of {limit}")
        block = Block(label, value, limit)
        with self.lock.held():
            self.store.put_block(self.id, block)
        return block

    def update_options(self, changes: dict[str, Any]) -> AgentOptions:
        """Store the agent's options with ``changes`` (:class:`AgentOptions` fields; ``None`` keeps a value) and
        use them from now on; the new options."""
        options = self.options.updated(**changes)
        self.store.save_options(self.id, options)
        self.options, self.record = options, replace(self.record, options=options)
        self.archive = Archive(self.store, self.id, options, self._embedder)
        self.tools = Toolbox(self.store, self.id, options, self.archive, self.now)
        return options

    # --- events without a step ---------------------------------------------------------------------
    def notify(self, message: str) -> None:
        """Put a system alert in the queue (it is read with the next event)."""
        with self.lock.held():
            self.store.append(self.id, [Event("system_alert", {"message": message}, self.now())])

    def import_messages(self, messages: Iterable[tuple[str, str, str]], in_context: bool = False) -> int:
        """Put past (role, text, time) messages into recall (out of context unless ``in_context``)."""
        events = []
        for role, text, when in messages:
            if role == "user":
                events.append(Event("user_message", {"message": text}, when, in_context=in_context))
            else:
                payload = {"thoughts": "", "function": "send_message", "arguments": {"message": text}}
                result = {"function": "send_message", "status": "OK", "message": "Sent message successfully."}
                events += [Event("step", payload, when, in_context=in_context),
                           Event("function_result", result, when, in_context=in_context)]
        with self.lock.held():
            return len(self.store.append(self.id, events))

    # --- a turn ------------------------------------------------------------------------------------
    def say(self, text: str, progress: Callable[[str, int, int, str], None] | None = None,
            trace: Trace | None = None, on_step: Callable[[Step], None] | None = None,
            key: str | None = None) -> TurnResult:
        """Handle one user message: step until the agent yields (or the step budget runs out). ``progress`` hears
        each step as it starts and the function it called (``(phase, done, total, unit)``, as the readers');
        ``on_step`` each finished step; the LLM calls go to ``trace`` (a new one if None). ``key``: the message's
        idempotency key: a message with this key already in recall (an earlier attempt was interrupted after
        storing it) is not stored again; the turn answers it."""
        self._progress = progress
        self._on_step = on_step
        self.check_message(text)
        with self.lock.held():
            self.state = AgentState.from_dict(self.store.get_agent(self.name).state.__dict__)
            self._recover()
            if key is None or not self._stored(text, key):
                payload = {"message": text, **({"key": key} if key is not None else {})}
                self.store.append(self.id, [Event("user_message", payload, self.now())])
            turn = TurnResult(trace=trace if trace is not None else Trace())
            try:
                self._run(turn, text)
            finally:
                self.store.save_state(self.id, self.state)
            return turn

    def check_message(self, text: str) -> None:
        """Refuse a message that cannot fit the window with its system prompt and core memory
        (:class:`~pagemind.errors.MessageTooLarge`), before anything is stored."""
        self.context.check_message(text, self.now())

    def _stored(self, text: str, key: str) -> bool:
        """Whether recall holds the user message ``text`` sent with idempotency key ``key``."""
        offset = 0
        while True:
            total, found = self.store.search_events(self.id, query=text, offset=offset, limit=50)
            if any(e.kind == "user_message" and e.payload.get("key") == key for e in found):
                return True
            offset += len(found)
            if not found or offset >= total:
                return False

    def _recover(self) -> None:
        """Answer calls left without a result by a crash, so the queue never holds an orphaned call."""
        queue = self.store.queue(self.id)
        orphans = [e for i, e in enumerate(queue)
                   if e.is_call and (i + 1 == len(queue) or queue[i + 1].kind != "function_result")]
        self.store.append(self.id, [Event("function_result", {"function": e.payload["function"], "status": "Failed",
                                                              "message": prompt("interrupted")}, self.now())
                                    for e in orphans])

    def _run(self, turn: TurnResult, text: str) -> None:
        steps = self.options.max_steps
        for i in range(steps):
            self.lock.refresh()
            last = self.options.final_reply and steps > 1 and i == steps - 1
            if last:  # the budget is nearly spent: the only function left is send_message
                # the message is quoted: a long chain of searches may have evicted it from the queue
                quoted = text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + " [...]"
                self.store.append(self.id, [Event("system_alert", {"message": prompt("last_step", message=quoted)},
                                                  self.now())])
                turn.trace.note(f"step {steps} of {steps}: only send_message is offered")
            prepared = self._prepare(turn, last)
            if self._progress is not None:
                self._progress(f"step {i + 1}: thinking", 0, 0, "")
            try:
                response, event = self._complete(prepared, turn, last)
            except ContextWindowExceeded:  # the backend counted more than we did: make room once more
                self._evict(turn)
                prepared = self._prepare(turn, last)
                response, event = self._complete(prepared, turn, last)
            step = self._act(reply_text(response), prepared.tokens, turn.trace, event)
            if self._progress is not None and step.function and step.function != "send_message":
                self._progress(f"step {i + 1}: {step.function}", 0, 0, "")
            if step.valid and step.function == "send_message":
                turn.messages.append(step.arguments["message"])
            reason = "failed" if step.status == "Failed" else ("requested" if step.heartbeat == "requested" else None)
            if reason is None and self._warn(self.context.build(), turn):
                reason = "warning"
            turn.steps.append(Step(**{**step.__dict__, "heartbeat": reason}))
            if self._on_step is not None:
                self._on_step(turn.steps[-1])
            if reason is None or (last and step.function == "send_message"):
                turn.stop_reason = "last_step" if last else "yield"
                return
            if reason != "warning":
                name = "heartbeat_failed" if reason == "failed" else "heartbeat_requested"
                self.store.append(self.id, [Event("heartbeat", {"reason": prompt(name)}, self.now())])
        turn.stop_reason = "max_steps"
        self.store.append(self.id, [Event("system_alert", {"message": prompt("step_budget", steps=len(turn.steps))},
                                          self.now())])

    def _complete(self, prepared: Prepared, turn: TurnResult, last: bool = False) -> tuple[Any, TraceEvent]:
        """One step's LLM call. A server that refuses native tool calls (a 4xx naming tools) is asked again
        with JSON replies, and the agent remembers it (with tool_calling=auto; "native" lets the error stand)."""
        try:
            return self.llm.complete(prepared.request, turn.trace)
        except BadRequest as err:
            if not prepared.request.tools or self.options.tool_calling != "auto" or "tool" not in str(err).lower():
                raise
            self.state.extra["tools_refused"] = str(err)[:300]
            turn.trace.note(f"native tool calls refused by the server; steps are JSON replies from now on ({err})")
            return self.llm.complete(self._prepare(turn, last).request, turn.trace)

    def _prepare(self, turn: TurnResult, last_step: bool = False) -> Prepared:
        """The next step's request, evicting until it fits and warning once the pressure threshold is passed."""
        prepared = self._fit(turn, last_step)
        if self._warn(prepared, turn):
            prepared = self._fit(turn, last_step)
        return prepared

    def _fit(self, turn: TurnResult, last_step: bool) -> Prepared:
        """The next step's request, evicting the queue's oldest part until it fits the window."""
        ctx = self.context
        prepared = ctx.build(last_step)
        while not ctx.fits(prepared):
            self._evict(turn)
            prepared = ctx.build(last_step)
        return prepared

    def _evict(self, turn: TurnResult) -> None:
        evicted = self.context.evict(turn.trace)
        if evicted == 0:
            raise ContextWindowExceeded(
                f"agent {self.name}: the system prompt, core memory and the last {self.options.keep_last} messages "
                f"do not fit its window of {self.context.window} tokens")
        turn.evictions += 1
        self.state.evictions += 1
        self.state.evicted_messages += evicted
        self.state.warned = False

    def _warn(self, prepared: Prepared, turn: TurnResult) -> bool:
        if self.state.warned or prepared.tokens <= self.context.warning_tokens:
            return False
        self.store.append(self.id, [Event("system_alert", {"message": prompt("warning")}, self.now())])
        self.state.warned = True
        turn.warnings += 1
        return True

    def _act(self, reply: str, tokens: int, trace: Trace, event: TraceEvent) -> Step:
        """Parse and run one step's call; every outcome is stored as a call plus its result."""
        try:
            action = parse_action(reply)
        except InvalidAction as err:
            self.state.invalid_actions += 1
            self.store.append(self.id, [
                Event("step", {"raw": reply[:2000], "invalid": True}, self.now()),
                Event("function_result", {"function": "?", "status": "Failed", "message": str(err)}, self.now())])
            trace.decide(event, f"invalid action: {err}")
            return Step("", None, {}, str(err), "Failed", None, False, reply, tokens)
        self.state.valid_actions += 1
        self.store.append(self.id, [Event("step", action.payload(), self.now())])  # write-ahead
        status = "OK"
        try:
            with self.store.transaction():
                message = self._cap(action.function, self.tools.run(action.function, action.arguments))
                self.store.append(self.id, [self._result(action.function, "OK", message)])
        except ToolError as err:
            status, message = "Failed", str(err)
        except Exception as err:  # noqa: BLE001 - any failure of a function goes back to the processor
            status, message = "Failed", f"Error calling function {action.function}: {type(err).__name__}: {err}"
        if status == "Failed":
            self.store.append(self.id, [self._result(action.function, status, message)])
        trace.decide(event, f"{action.function} -> {status}")
        return Step(action.thoughts, action.function, action.arguments, message, status,
                    "requested" if action.heartbeat else None, True, reply, tokens)

    def _result(self, function: str, status: str, message: str) -> Event:
        return Event("function_result", {"function": function, "status": status, "message": message}, self.now())

    def _cap(self, function: str, message: str) -> str:
        limit = self.options.result_chars
        if function in _SEARCHES or len(message) <= limit:  # search results are sized by their page
            return message
        return message[:limit] + f" [... cut at {limit} characters]"
