"""One agent turn: a user message, then steps (one LLM call, one function call each) until the agent yields.

A :class:`Turn` is to the agent what MemGPT's main loop is in the paper (and MemWalker's ``Walk`` is to a
question): per step it makes ONE :class:`~pagemind.agent.context.MainContext`, fits the prompt into the window
(evicting the queue's head with a recursive summary: the one place the queue is flushed), warns of memory
pressure from token counts, calls the model and runs the call. Each step's call is stored before it runs
(write-ahead); its side effects and its result are committed together, so a crash leaves at most a call without
a result, which the next turn answers with a synthetic "interrupted" error before it starts.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..answering.probability import NONE, AnswerProbability, asking_probability, of_tokens
from ..citations import Citation
from ..errors import ContextWindowExceeded, ToolsRefused
from ..llm.base import LLMRequest, LLMResponse
from ..llm.usage import Trace, TraceEvent, Usage
from ..text.when import ELAPSED, elapsed
from .actions import Action, InvalidAction, parse_action, reply_text
from .context import MainContext, Prepared, prompt
from .evidence import source_of, support
from .functions import SPECS, ToolError
from .memory import Event, Passage

if TYPE_CHECKING:
    from ..answering.support import Support
    from ..llm.client import LLM
    from .core import Agent

_SEARCHES = ("conversation_search", "conversation_search_date", "archival_memory_search")
_CORE_EDITS = ("core_memory_append", "core_memory_replace")
_QUOTE_CHARS = 1500  # the user's message quoted in the last-step alert, at most
RECALL_CANDIDATES = 40  # best matches of each memory recall before reply chooses among (within its tokens)
_RECALL_MARGIN = 16  # tokens kept free beside recall's estimate (a backend may count the joined lines a little higher)
_RESULT_KINDS = ("function_result", "heartbeat")
_RECALL_ANSWER_CONTEXT = 6  # the conversation's last messages the reply from recall reads beside what was recalled
_REPLY_TOKENS = 200  # the reply from recall's tokens, at most (send_message takes 600 characters)
_REPLY_CHARS = next(p.max_length for p in SPECS["send_message"].all_params if p.name == "message")
NOTE_TOKENS = 40  # the summary note's own words ("Note: prior messages (…) have been hidden …"), its summary aside
Progress = Callable[[str, int, int, str], None]


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
    source: int | None = None  # a core-memory edit: the seq of the user message the saved fact came from
    citations: tuple[Citation, ...] = ()  # a core-memory edit: that message, cited where the fact is in it


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
    evidence: list[Citation] = field(default_factory=list)  # every passage and message the searches returned
    citations: list[Citation] = field(default_factory=list)  # what the reply used, and the sources of saved facts
    recalled: list[Citation] = field(default_factory=list)  # placed in context before the reply (recall_first)
    support: Support | None = None  # how well what the searches returned supports the reply (None: no search)
    # how probable the model found a reply from recall (where the backend says): recorded as an answer's is; the
    # confidence stays the support's (a fitted one did no better on the agent's LoCoMo replies, benchmarks (ao))
    probability: AnswerProbability = NONE

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
                "citations": [c.as_dict() for c in self.citations],
                "recalled": [c.as_dict() for c in self.recalled],
                "support": None if self.support is None else self.support.as_dict(),
                "confidence": None if self.support is None else self.support.confidence,
                "probability": self.probability.as_dict(),
                "steps": [_step_dict(s) for s in self.steps], **({"run_id": self.run_id} if self.run_id else {})}


def _step_dict(step: Step) -> dict[str, Any]:
    return {**step.__dict__, "citations": [c.as_dict() for c in step.citations]}


def step_record(step: Step) -> dict[str, Any]:
    """A step as a run records it: what the agent thought, called and got (the raw reply left out: it is on the
    step's LLM call)."""
    return {k: v for k, v in _step_dict(step).items() if k != "reply"}


def supersedes(llm: LLM, trace: Trace, old: str, new: str) -> bool:
    """The supersession check: does the fact ``new`` replace the stored ``old``? One short yes/no call in ``trace``,
    re-asked once; no answer is read as no (nothing is marked superseded on a guess). A turn's archival inserts and
    a consolidation pass's facts ask it alike (``supersede_check``)."""
    from ..llm.base import Constraint
    from ..llm.decide import Invalid, decide

    asked = LLMRequest.user(prompt("supersedes", old=old, new=new), role="supersede", max_tokens=4,
                            constraint=Constraint("yes-no", gbnf='root ::= "yes" | "no"',
                                                  json_schema={"type": "string", "enum": ["yes", "no"]}))

    def read(reply: str) -> bool | Invalid:
        said = set(re.findall(r"\b(yes|no)\b", reply.lower()))
        return said == {"yes"} if len(said) == 1 else Invalid("reply with one word: yes or no")

    decision = decide(llm, asked, read, trace, retries=1)
    if decision.value is None:
        trace.note(f"supersession check: no yes or no ({'; '.join(decision.problems)}): not superseded")
    return bool(decision.value)


class Turn:
    """One user message's turn of ``agent`` (run under its turn lock, its state loaded): :meth:`run` stores the
    message and steps until the agent yields, the step budget runs out, or an error ends it."""

    def __init__(self, agent: Agent, text: str, trace: Trace | None = None, *, key: str | None = None,
                 progress: Progress | None = None, on_step: Callable[[Step], None] | None = None) -> None:
        self.agent, self.text, self.key = agent, text, key
        self.llm, self.store, self.options, self.state = agent.llm, agent.store, agent.options, agent.state
        self.result = TurnResult(trace=trace if trace is not None else Trace())
        self.progress, self.on_step = progress, on_step
        self.before = 0  # the agent's last event seq before this turn (set by run)
        self.held = 0  # replies held back this turn for want of support (at most options.search_again)
        self.remaining = 0  # steps left after the running one
        self.recalled_lines: list[str] = []  # what recall before reply placed, as shown (and in its order)
        self.recalled_order = _shown_order(self.options.recall_order)  # how that order is named where it is shown
        self.counted_from = ""  # the time the recalled lines are counted back from (time gone by asked), else ""

    @property
    def trace(self) -> Trace:
        return self.result.trace

    def _append(self, *events: Event) -> list[Event]:
        return self.store.append(self.agent.id, list(events))

    def _alert(self, message: str) -> None:
        self._append(Event("system_alert", {"message": message}, self.agent.now()))

    def context(self) -> MainContext:
        """A step's main context (one per step)."""
        return MainContext(self.llm, self.store, self.agent.id, self.options, self.agent.now,
                           tools_refused=bool(self.state.extra.get("tools_refused")))

    # --- the turn ----------------------------------------------------------------------------------
    def run(self) -> TurnResult:
        self.before = self.store.count_events(self.agent.id)  # seqs above it are this turn's own (never evidence)
        self.agent.tools.judge = self._supersedes if self.options.supersede_check else None
        self.agent.tools.turn_start, self.agent.tools.user_said = self.before, self.text
        try:
            return self._run()
        finally:
            self.agent.tools.judge, self.agent.tools.turn_start, self.agent.tools.user_said = None, None, None

    def _supersedes(self, old: str, new: str) -> bool:
        return supersedes(self.llm, self.trace, old, new)

    def _run(self) -> TurnResult:
        self._recover()
        if self.key is None or not self._stored():
            payload = {"message": self.text, **({"key": self.key} if self.key is not None else {})}
            self._append(Event("user_message", payload, self.agent.now()))
            if self.options.recall_first:
                self._recall_first()
                if self.options.recall_answer and self.recalled_lines and _only_asks(self.text) and \
                        self._answer_from_recall():
                    return self._cited()
        steps = max(1, self.options.max_steps - len(self.result.steps))  # a held reply from recall was a step
        for i in range(steps):
            self.agent.lock.refresh()
            last = self.options.final_reply and steps > 1 and i == steps - 1
            if last:  # the budget is nearly spent: the only function left is send_message
                # the message is quoted: a long chain of searches may have evicted it from the queue
                quoted = self.text if len(self.text) <= _QUOTE_CHARS else self.text[:_QUOTE_CHARS] + " [...]"
                self._alert(prompt("last_step", message=quoted))
                self.trace.note(f"step {steps} of {steps}: only send_message is offered")
            self.remaining = steps - i - 1
            step = self._step(self.context(), i, last)
            self._took(step)
            if step.heartbeat is None or (last and step.function == "send_message"):
                self.result.stop_reason = "last_step" if last else "yield"
                return self._cited()
            if step.heartbeat != "warning":
                name = "heartbeat_failed" if step.heartbeat == "failed" else "heartbeat_requested"
                self._append(Event("heartbeat", {"reason": prompt(name)}, self.agent.now()))
        self.result.stop_reason = "max_steps"
        self._alert(prompt("step_budget", steps=len(self.result.steps)))
        return self._cited()

    def _recall_first(self) -> None:
        """Recall before reply: the messages and archival passages that best match the user's message (as the
        agent's own searches rank them; never this turn's), chosen best first — each memory's in turn — within
        ``recall_tokens`` and the window's room below the memory-pressure warning, shown in ``recall_order``, as one
        alert after the message; they are the turn's evidence like a search's results, and the result's
        ``recalled`` (what the run, the viewer and Letta's reply show). Nothing when nothing matches."""
        from .evidence import message_citation, passage_citation

        tools, size = self.agent.tools, max(self.options.page_size, RECALL_CANDIDATES)
        query = _question(self.text) or self.text
        _, events = tools.recall_events(query, 0, size)
        _, passages = self.agent.archive.search_passages(query, 0, size) \
            if self.store.count_passages(self.agent.id) else (0, [])
        said: list[tuple[str, int, str, Event | Passage]] = [(e.time, e.seq, e.describe(), e) for e in events]
        kept_facts: list[tuple[str, int, str, Event | Passage]] = [
            (p.time, p.id, f"{p.describe()} (archival passage {p.id})", p) for p in passages
            if p.superseded_by is None]
        in_time = _ORDER_ASKED.search(self.text) is not None  # which came first: the lines as they were said
        order = self.recalled_order = "the oldest first" if in_time else _shown_order(self.options.recall_order)
        ctx = self.context()
        empty = Event("system_alert", {"message": prompt("recalled", lines="", order=order)}, self.agent.now())
        # below the pressure warning and within what fits beside a reply: recall never evicts nor warns
        room = (min(ctx.warning_tokens, ctx.window - self.options.max_tokens) - ctx.build().tokens
                - self.llm.count_tokens(empty.render()) - _RECALL_MARGIN)
        budget = start = min(self.options.recall_tokens, room)
        chosen: list[tuple[str, int, str, Event | Passage]] = []
        self.counted_from = self.agent.now() if ELAPSED.search(self.text) else ""  # time gone by asked: lines counted
        now = self.counted_from or None
        for item in (x for pair in itertools.zip_longest(said, kept_facts) for x in pair if x is not None):
            line = item[2] if len(item[2]) <= 600 else item[2][:597] + "..."
            if now is not None and not (isinstance(item[3], Passage) and item[3].from_document):
                line = _aged(line, item[0], now)  # (a loaded document's time is when it was loaded: not counted)
            cost = self.llm.count_tokens(json.dumps(line, ensure_ascii=False)) + 1  # as the alert's JSON writes it
            if cost > budget:
                continue
            budget -= cost
            chosen.append((item[0], item[1], line, item[3]))
        if in_time:
            chosen.sort(key=lambda item: item[:2])
        elif self.options.recall_order == "recent":  # a later fact first: it may replace an earlier one
            chosen.sort(key=lambda item: item[:2], reverse=True)
        if not chosen:
            self.trace.note("recall before reply: no room in the window below the pressure warning" if start <= 0
                            else "recall before reply: nothing in memory matches the message")
            return
        kept = [item for _, _, _, item in chosen]
        self.recalled_lines = [line for _, _, line, _ in chosen]
        self._alert(prompt("recalled", lines="\n".join(self.recalled_lines), order=order))
        self.result.recalled = [passage_citation(i) if isinstance(i, Passage) else message_citation(i) for i in kept]
        self.result.evidence.extend(c for c, i in zip(self.result.recalled, kept, strict=True)
                                    if not isinstance(i, Event) or i.kind == "user_message")
        self.trace.note(f"recall before reply: {sum(isinstance(i, Event) for i in kept)} message(s) and "
                        f"{sum(isinstance(i, Passage) for i in kept)} passage(s), {start - budget} tokens of "
                        f"{start} (recall_tokens {self.options.recall_tokens}, the window's room {room})")

    def _answer_from_recall(self) -> bool:
        """The reply from recall (``recall_answer``): one plain call that reads what recall before reply placed,
        the user's block and the last messages of the conversation, and answers the message (as OP-RAG answers
        from its fragments, and mem0's and Zep's assistants from the memories they place), sent as the turn's
        send_message step — stored, cited and checked as one. A reply saying the memories do not tell (or an empty
        one) is not sent: the turn goes on with the agent's own steps, which search. True when a reply was sent.

        The prompt asks for "I do not know" where the memories do not tell, not for a fixed word: asked to reply
        "NOT IN MEMORY" then, the 1.5B default model did so on 14 of 24 LoCoMo questions whose answer was
        recalled (benchmarks (ao))."""
        from ..answering.support import declined, placeholder
        from ..llm.decide import Invalid, decide

        self.agent.lock.refresh()
        if self.progress is not None:
            self.progress("step 1: answering from what was recalled", 0, 0, "")
        blocks = {b.label: b.value for b in self.store.blocks(self.agent.id)}
        boot = prompt("boot_message")  # the new agent's first message is no part of a conversation
        said = [e for e in self.store.queue(self.agent.id) if e.seq <= self.before and (
            e.kind == "user_message" or (e.kind == "step" and e.payload.get("function") == "send_message"
                                         and not e.payload.get("held")
                                         and e.payload.get("arguments", {}).get("message") != boot))]
        text = prompt("recall_answer", memory=blocks.get("human", "").strip(),
                      now=self.counted_from[:16],
                      order=self.recalled_order,
                      conversation="\n".join(_said(e) for e in said[-_RECALL_ANSWER_CONTEXT:]),
                      lines="\n".join(self.recalled_lines), message=self.text)
        request = asking_probability(LLMRequest.user(text, role="recall-answer", max_tokens=min(
            self.options.max_tokens, _REPLY_TOKENS)), self.llm.backend.capabilities)

        def read(reply: str) -> str | Invalid:
            answer = _unwrapped(" ".join(reply.split()))
            return answer if answer else Invalid("the reply is empty: answer the message, or say it is not there")

        decision = decide(self.llm, request, read, self.trace, retries=0,
                          describe=lambda answer: f"reply from recall ({len(answer.split())} words)")
        answer = decision.value or ""
        if not answer or declined(answer) or placeholder(answer) or _NOT_TOLD.search(answer):
            self.trace.note("reply from recall: the recalled memories do not answer the message; the agent's own "
                            "steps go on")
            return False
        if len(answer) > _REPLY_CHARS:  # send_message's bound: cut at a sentence's end where one is near
            cut = answer[:_REPLY_CHARS]
            end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
            answer = cut[:end + 1] if end > _REPLY_CHARS // 2 else cut[:_REPLY_CHARS - 3].rstrip() + "..."
        action = Action(prompt("recall_answer_thoughts"), "send_message", {"message": answer}, False)
        self.remaining = self.options.max_steps  # every step is still to come: a reply that echoes the message is held
        tokens = decision.response.prompt_tokens if decision.response is not None else 0
        held = self.held
        self.state.valid_actions += 1
        step = self._perform(action, decision.reply, tokens, None)
        self.held = held  # an echo held here leaves the agent's own replies their hold (search_again)
        if step.status != "OK":
            step = _with(step, "failed")
        self._took(step)
        if step.status != "OK":  # held (it sent the question back): the agent's own steps go on, told why
            self._append(Event("heartbeat", {"reason": prompt("heartbeat_failed")}, self.agent.now()))
            return False
        self.result.messages.append(answer)
        self.result.probability = of_tokens(decision.response)  # the reply's tokens' own probability, where given
        self.result.stop_reason = "yield"
        return True

    def _took(self, step: Step) -> None:
        """A step of the turn done: in its result, and told to whoever follows the turn (a stream, the viewer)."""
        self.result.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)

    def _cited(self) -> TurnResult:
        """The result with its citations: the passages and messages the searches returned that the reply uses
        (aligned lexically, no LLM call), then the messages the facts saved to core memory came from."""
        result = self.result
        evidence = self._evidence()
        cited = self._support(evidence, " ".join(result.messages))
        if evidence and result.messages:  # the reply checked against what its searches returned, as an answer is
            from ..answering.support import assess

            result.support = assess(self.text, " ".join(result.messages), cited, [c.quote for c in evidence])
        seen = {(c.unit, c.index, c.start, c.end) for c in cited}
        for step in result.steps:
            for c in step.citations:
                if (c.unit, c.index, c.start, c.end) not in seen:
                    seen.add((c.unit, c.index, c.start, c.end))
                    cited.append(c)
        result.citations = cited
        return result

    def _support(self, evidence: list[Citation], reply: str) -> list[Citation]:
        """The evidence ``reply`` used (:func:`~pagemind.agent.evidence.support`), read against the user's question
        and the messages cited (when each was said, and by whom)."""
        seqs = sorted({c.index for c in evidence if c.unit == "message" and c.index is not None})
        said = {e.seq: e for e in self.store.events(self.agent.id, seqs)} if seqs else {}
        return support(evidence, reply, messages=said, question=_question(self.text))

    def _evidence(self) -> list[Citation]:
        """What this turn's searches returned, but its own messages (what the agent said this turn is no source)."""
        return [c for c in self.result.evidence if c.unit != "message" or (c.index or 0) <= self.before]

    def _hold(self, message: str) -> str | None:
        """Why the reply ``message`` is held back, or None to send it: a reply to a question, with two steps left,
        after searches that returned nothing supporting it (or saying itself that nothing was found) is not sent —
        the agent is told to search on, as MemGPT pages through results — at most ``search_again`` times a turn.
        The hold carries one more page of recall search itself, for the user's question in its own words (small
        models search with words of their own that miss; they rarely search again when told to): its results are
        the turn's evidence like any search's."""
        if self.held >= self.options.search_again or self.remaining < 2 or not _asks(self.text):
            return None
        if _echoes(message, self.text):  # the user's question sent back as the reply (a small model, long context)
            self.held += 1
            self.trace.note("reply held back: it repeats the user's message")
            return prompt("echo")
        searches = [s for s in self.result.steps if s.function in _SEARCHES and s.status == "OK"]
        if not searches:
            return None
        from ..answering.support import assess

        evidence = self._evidence()
        judged = assess(self.text, message, self._support(evidence, message), [c.quote for c in evidence])
        if not judged.declined and judged.label != "unsupported":
            return None
        self.held += 1
        why = "your reply says nothing was found" if judged.declined else \
            judged.reason or "the words of your reply are not in it"
        page = int(searches[-1].arguments.get("page") or 0) + 1
        self.trace.note(f"reply held back ({why}): the agent is told to search again")
        return self._search_for_question(prompt("search_again", why=why, page=page))

    def _search_for_question(self, held: str) -> str:
        """The hold's reason with one more page of recall search for the user's question in its own words: the
        first page that shows a message neither recall before reply nor the turn's searches showed already."""
        query, tools = _question(self.text), self.agent.tools
        shown = {c.index for c in self.result.recalled if c.unit == "message"}
        for step in self.result.steps:  # every message a search of this turn showed (its evidence: users' only)
            if step.function == "conversation_search" and step.status == "OK":
                try:
                    shown |= {e.seq for e in tools.recall_events(str(step.arguments.get("query", "")),
                                                                 int(step.arguments.get("page") or 0))[1]}
                except (TypeError, ValueError, ToolError):
                    continue
        for page in range(_HOLD_PAGES):
            _, events = tools.recall_events(query, page)
            if not events or any(e.seq not in shown for e in events):
                break
        else:
            page = _HOLD_PAGES  # the first pages all shown: the next
        try:
            found = tools.run("conversation_search", {"query": query, "page": page})
        except ToolError:
            return held
        self.result.evidence.extend(tools.found)
        return f'{held}\nRecall searched for the question ("{query}"): {found}'

    def _step(self, ctx: MainContext, i: int, last: bool) -> Step:
        """One step on its context: the prompt fitted, the call, the action run, and why the next step follows
        (``heartbeat``: requested | failed | warning; None: the agent yields)."""
        prepared = self._prepare(ctx, last)
        if self.progress is not None:
            self.progress(f"step {i + 1}: thinking", 0, 0, "")
        try:
            response, event, prepared = self._complete(ctx, prepared, last)
        except ContextWindowExceeded:  # the backend counted more than we did: make room once more
            self._evict(ctx)
            response, event, prepared = self._complete(ctx, self._prepare(ctx, last), last)
        step = self._act(reply_text(response), prepared.tokens, event)
        if self.progress is not None and step.function and step.function != "send_message":
            self.progress(f"step {i + 1}: {step.function}", 0, 0, "")
        if step.valid and step.function == "send_message" and step.status == "OK":
            self.result.messages.append(step.arguments["message"])
        if step.status == "Failed":
            return _with(step, "failed")
        if step.heartbeat is None and self._warn(ctx, prepared.tokens + response.completion_tokens):
            return _with(step, "warning")  # the paper's check: the call's prompt and reply tokens
        return step

    def _complete(self, ctx: MainContext, prepared: Prepared,
                  last: bool) -> tuple[LLMResponse, TraceEvent, Prepared]:
        """The step's LLM call (and the request it sent). A server that refuses native tool calls
        (:class:`ToolsRefused`) is asked again with JSON replies, and the agent remembers it (with
        tool_calling=auto; "native" lets the error stand)."""
        try:
            return (*self.llm.complete(prepared.request, self.trace), prepared)
        except ToolsRefused as err:
            if self.options.tool_calling != "auto":
                raise
            self.state.extra["tools_refused"] = str(err)[:300]
            ctx.tools_refused = True
            self.trace.note(f"native tool calls refused by the server; steps are JSON replies from now on ({err})")
            prepared = self._prepare(ctx, last)
            return (*self.llm.complete(prepared.request, self.trace), prepared)

    def _prepare(self, ctx: MainContext, last: bool) -> Prepared:
        """The step's request, evicting until it fits and warning once the pressure threshold is passed."""
        prepared = self._fit(ctx, last)
        if self._warn(ctx, prepared.tokens):
            prepared = self._fit(ctx, last)
        return prepared

    def _fit(self, ctx: MainContext, last: bool) -> Prepared:
        prepared = ctx.build(last)
        while not ctx.fits(prepared):  # once, as a rule: the eviction frees what the prompt is over by
            self._evict(ctx, over=prepared.tokens + self.options.max_tokens - ctx.window)
            prepared = ctx.build(last)
        return prepared

    def _warn(self, ctx: MainContext, tokens: int) -> bool:
        """Send the memory-pressure warning (once until the next eviction) when ``tokens`` pass the threshold."""
        if self.state.warned or tokens <= ctx.warning_tokens:
            return False
        self._alert(prompt("warning"))
        self.state.warned = True
        self.result.warnings += 1
        return True

    # --- the step's action -------------------------------------------------------------------------
    def _act(self, reply: str, tokens: int, event: TraceEvent) -> Step:
        """Parse and run one step's call; every outcome is stored as a call plus its result."""
        now = self.agent.now
        try:
            action = parse_action(reply)
        except InvalidAction as err:
            self.state.invalid_actions += 1
            self._append(Event("step", {"raw": reply[:2000], "invalid": True}, now()),
                         Event("function_result", {"function": "?", "status": "Failed", "message": str(err)}, now()))
            self.trace.decide(event, f"invalid action: {err}")
            return Step("", None, {}, str(err), "Failed", None, False, reply, tokens)
        self.state.valid_actions += 1
        return self._perform(action, reply, tokens, event)

    def _perform(self, action: Action, reply: str, tokens: int, event: TraceEvent | None) -> Step:
        """Run one valid call (a reply sent is first judged by :meth:`_hold`); stored before it runs, its result
        after."""
        now = self.agent.now
        held = self._hold(action.arguments["message"]) if action.function == "send_message" else None
        (written,) = self._append(Event("step", {**action.payload(), **({"held": held} if held else {})}, now()))
        status = "OK"  # (the step is stored before it runs: write-ahead)
        repeats = sum(1 for s in self.result.steps if s.function == action.function and s.arguments == action.arguments)
        try:
            if held is not None:  # not sent: the reason is the call's result, and the agent steps on
                raise ToolError(held)
            if repeats >= 2 and action.function != "send_message":  # a loop: the same call a third time is not run
                self.trace.note(f"{action.function}: the same call a third time this turn, not run")
                raise ToolError(f"Not run: you made this same {action.function} call twice already in this turn "
                                "and it is done. Do something else, or reply to the user with send_message.")
            with self.store.transaction():
                cause = f"step {written.seq}: {action.function}"  # a core-memory version names its step
                message = self._cap(action.function, self.agent.tools.run(action.function, action.arguments, cause))
                self._append(self._result(action.function, "OK", message))
        except ToolError as err:
            status, message = "Failed", str(err)
        except Exception as err:  # any failure of a function goes back to the processor
            status, message = "Failed", f"Error calling function {action.function}: {type(err).__name__}: {err}"
        if status == "Failed":
            self._append(self._result(action.function, status, message))
        else:
            self.result.evidence.extend(self.agent.tools.found)
        if event is not None:
            self.trace.decide(event, f"{action.function} -> {status}")
        source = self._source(action.function, action.arguments) if status == "OK" else None
        return Step(action.thoughts, action.function, action.arguments, message, status,
                    "requested" if action.heartbeat else None, True, reply, tokens,
                    None if source is None else source.index, () if source is None else (source,))

    def _source(self, function: str, arguments: dict[str, Any]) -> Citation | None:
        """The user message a fact saved to core memory came from (among the messages in context)."""
        if function not in _CORE_EDITS:
            return None
        content = arguments.get("content") or arguments.get("new_content") or ""
        return source_of(content, self.store.queue(self.agent.id)) if content.strip() else None

    def _result(self, function: str, status: str, message: str) -> Event:
        return Event("function_result", {"function": function, "status": status, "message": message},
                     self.agent.now())

    def _cap(self, function: str, message: str) -> str:
        limit = self.options.result_chars
        if function in _SEARCHES or len(message) <= limit:  # search results are sized by their page
            return message
        return message[:limit] + f" [... cut at {limit} characters]"

    # --- before the first step ---------------------------------------------------------------------
    def _stored(self) -> bool:
        """Whether recall holds this user message, sent with this idempotency key (an interrupted attempt)."""
        offset = 0
        while True:
            total, found = self.store.search_events(self.agent.id, query=self.text, offset=offset, limit=50)
            if any(e.kind == "user_message" and e.payload.get("key") == self.key for e in found):
                return True
            offset += len(found)
            if not found or offset >= total:
                return False

    def _recover(self) -> None:
        """Answer calls left without a result by a crash, so the queue never holds an orphaned call."""
        queue = self.store.queue(self.agent.id)
        orphans = [e for i, e in enumerate(queue)
                   if e.is_call and (i + 1 == len(queue) or queue[i + 1].kind != "function_result")]
        self._append(*[Event("function_result", {"function": e.payload["function"], "status": "Failed",
                                                 "message": prompt("interrupted")}, self.agent.now())
                       for e in orphans])

    # --- eviction: the one place the queue is flushed ----------------------------------------------
    def _evict(self, ctx: MainContext, over: int = 0) -> None:
        """Move the queue's oldest part to recall only, summarised (with the previous summary) into the note at
        the queue's head; :class:`ContextWindowExceeded` when nothing can be evicted. ``over``: the tokens the
        prompt is over its window by (0: unknown, the backend refused it)."""
        queue = self.store.queue(self.agent.id)
        previous = next((e for e in queue if e.kind == "summary"), None)
        body = [e for e in queue if e.kind != "summary"]
        cut = self._cut_point(body, over)
        if cut == 0:
            raise ContextWindowExceeded(
                f"agent {self.agent.name}: the system prompt, core memory and the last {self.options.keep_last} "
                f"messages do not fit its window of {ctx.window} tokens")
        evicted = body[:cut]
        summary = self._summarise(ctx, [e.describe() for e in evicted],
                                  previous.payload["summary"] if previous else "")
        hidden = cut + (previous.payload["hidden"] if previous else 0)
        note = prompt("summary_note", hidden=hidden, total=hidden + len(body) - cut, summary=summary)
        self.store.evict(self.agent.id, [e.seq for e in evicted],
                         Event("summary", {"message": note, "summary": summary, "hidden": hidden}, self.agent.now()))
        self.result.evictions += 1
        self.state.evictions += 1
        self.state.evicted_messages += cut
        self.state.warned = False

    def _cut_point(self, body: list[Event], over: int = 0) -> int:
        """How many of the oldest queue events to evict: about ``evict_fraction`` of them (the paper's share), or
        as many as free ``over`` tokens and the summary note's room when that share would not (one summary call
        then, not one per halving), keeping the last ``keep_last``, and never leaving a function result (or its
        heartbeat) without its call. When the last ``keep_last`` begin inside a call's results (a failed step, its
        result and heartbeat, then a warning), the call goes out with its results: fewer are kept (at least one), the
        turn goes on."""
        limit = len(body) - self.options.keep_last
        if limit <= 0:
            return 0
        target = max(1, round(len(body) * self.options.evict_fraction))
        if over > 0:
            room = over + NOTE_TOKENS + 2 * self.options.summary_words  # the note that replaces them, summary in it
            sizes = itertools.accumulate(self.llm.count_tokens_many([e.render() for e in body[:limit]]))
            target = max(target, next((i + 1 for i, freed in enumerate(sizes) if freed >= room), limit))
        target = min(target, limit)
        for i in [*range(target, limit + 1), *range(target - 1, 0, -1), *range(limit + 1, len(body))]:
            if i == len(body) or body[i].kind not in _RESULT_KINDS:  # all of it, with keep_last 0
                return i
        return 0

    def _summarise(self, ctx: MainContext, lines: list[str], previous: str) -> str:
        """A recursive summary: fold the lines in chunks that fit the window, each with the summary so far."""
        from ..llm.decide import Invalid, decide

        def read(reply: str) -> str | Invalid:
            said = " ".join(reply.split())
            if not said:
                return Invalid("the reply is empty: write the summary")
            if REFUSAL.match(said):
                return Invalid("that is not a summary: summarise the messages above, in the words asked for")
            return said

        summary = previous
        for chunk in self._chunks(ctx, lines, previous):
            decision = decide(self.llm, self._summary_request(chunk, summary), read, self.trace, retries=1,
                              describe=lambda said: f"summary ({len(said.split())} words)")
            if decision.value is not None:
                summary = decision.value
                continue
            # a refusal or nothing, twice: never kept as memory; the messages' own beginnings stand in for it
            kept = extractive(chunk, self.options.summary_words)
            summary = f"{summary} {kept}".strip() if summary else kept
            self.trace.note(f"summary: no summary of {len(chunk)} messages after {decision.calls} replies "
                            f"({'; '.join(decision.problems)[:120]}): their beginnings kept instead")
        return summary

    def _summary_request(self, lines: list[str], previous: str) -> LLMRequest:
        words = self.options.summary_words
        text = prompt("summarise", words=words, previous=previous, messages="\n".join(lines))
        return LLMRequest.user(text, role="summarise", max_tokens=max(64, int(words * 2)))

    def _chunks(self, ctx: MainContext, lines: list[str], previous: str) -> list[list[str]]:
        reply = max(64, self.options.summary_words * 2)
        # the previous summary grows to at most ~summary_words: budget for it in every chunk
        fixed = self.llm.prompt_tokens(self._summary_request([], previous or "x " * self.options.summary_words * 2))
        budget = ctx.window - reply - fixed
        if budget < 50:
            raise ContextWindowExceeded(f"agent window of {ctx.window} tokens is too small to summarise")
        chunks: list[list[str]] = [[]]
        used = 0
        for line in lines:
            n = self.llm.count_tokens(line) + 1
            if n > budget:  # one huge message: keep its beginning
                line = line[: max(20, int(len(line) * budget / n) - 20)] + " [...]"
                n = budget
            if used + n > budget and chunks[-1]:
                chunks.append([])
                used = 0
            chunks[-1].append(line)
            used += n
        return [c for c in chunks if c]


_QUESTION_WORDS = frozenset("what when where who whom whose which why how did do does is are was were can could has "
                            "have had will would should may".split())


_HOLD_PAGES = 5  # pages of recall a hold looks through for one that shows something new


def _asks(text: str) -> bool:
    """Whether a user message asks something (a question mark, or a question's first word)."""
    words = text.split()
    return "?" in text or (bool(words) and words[0].lower().strip(",.:;!") in _QUESTION_WORDS)


# a message that asks the agent to keep, change or drop something in its memory ("Can you remember that …?")
_KEEP = (r"(?:remember|memori[sz]e|note|save|store|record|write\s+down|keep\s+in\s+mind|keep\s+(?:that|this|it)|"
         r"forget|update|correct|change|add)\b")
_MEMORY_REQUEST = re.compile(rf"(?:^|[.!?]\s+)(?:please\s+)?{_KEEP}|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?"
                             rf"{_KEEP}|\bplease\s+{_KEEP}|\b(?:don['’]?t|do\s+not|never)\s+forget\b|"
                             r"\b(?:to|in|into)\s+your\s+memory\b|\bfrom\s+now\s+on\b", re.IGNORECASE)
# a clause in which the user tells something of their own ("I moved to Leeds.", "I'm vegan, so what …?"), after a
# greeting or a filler word ("Hey,", "Actually")
_TELLS = re.compile(r"^(?:(?:hey|hi|hello|oh|ok|okay|so|well|actually|btw|also|and|but|anyway)\b\W*)*"
                    r"(?:I|I'm|I've|I'd|I'll|Im|My|We|We're|We've|Our)\b", re.IGNORECASE)


_OPTION_LINE = re.compile(r"^\s*\(?[A-J][).:]\s")  # "(A) I maintain rental properties.", "B. My mom was a librarian."


def _only_asks(text: str) -> bool:
    """Whether a user message only asks (what the reply from recall answers): it asks something, asks nothing of
    the agent's memory ("Can you remember that my code is 4417?") and tells nothing of the user's own ("I moved to
    Leeds. Which bus goes to the centre?") — those are the agent's own steps to answer, which may save them."""
    if not _asks(text) or _MEMORY_REQUEST.search(text):
        return False
    lines = [line for line in text.splitlines() if not _OPTION_LINE.match(line)]  # a question's options tell nothing
    clauses = [c.strip() for c in re.split(r"[.!?;,:\n]+", "\n".join(lines))]
    return not any(_TELLS.match(c) for c in clauses if c and c.split()[0].lower() not in _QUESTION_WORDS)


# a summary or consolidation reply that refuses instead of doing the task (small models do, on chat transcripts)
REFUSAL = re.compile(r"^(?:I'?m sorry|I am sorry|Sorry,|I can'?not|I can'?t|I cannot|I'?m unable|I am unable|As an AI)"
                     r"\b", re.I)


def extractive(lines: Sequence[str], words: int) -> str:
    """The beginnings of ``lines`` (a few words each, the most recent kept when they do not all fit), at most
    ``words`` words: what stands for a summary the model would not write."""
    each = max(6, words // max(1, len(lines)))
    parts = [" ".join(line.split()[:each]) for line in lines if line.strip()]
    out: list[str] = []
    for part in reversed(parts):
        if sum(len(p.split()) for p in out) + len(part.split()) > words:
            break
        out.insert(0, part)
    return " / ".join(out)


ECHO_WORDS = 4  # a reply or question shorter than this is not judged an echo ("Yes.", "Why?")
ECHO_SHARE = 0.8  # of a reply's words that are the message's, for a reply holding the question to be its echo


def _echoes(reply: str, said: str) -> bool:
    """Whether ``reply`` repeats the user's message ``said`` instead of answering it: the question it asks
    (:func:`_question`) word for word inside a reply of the message's words (:data:`ECHO_SHARE` of them), or the
    reply a run of the message's words. "What did she research? She researched adoption agencies." answers, and so
    does a yes or no that restates the question ("Yes, Caroline would have Dr. Seuss books on her bookshelf.")."""
    def words(text: str) -> str:
        return " " + " ".join(re.findall(r"\w+", text.lower())) + " "

    from ..text.words import VERDICT

    question, answer, message = words(_question(said)), words(reply), words(said)
    if len(answer.split()) < ECHO_WORDS or VERDICT.match(reply):  # "Yes, she would …" answers, in its words
        return False
    if answer in message:
        return True
    own = set(message.split())
    return len(question.split()) >= ECHO_WORDS and question in answer and \
        sum(w in own for w in answer.split()) >= ECHO_SHARE * len(answer.split())


def _question(text: str) -> str:
    """The question a user message asks, as a search query: its last sentence ending in "?" (a message may wrap it
    in instructions), else its beginning; at most conversation_search's 100 characters."""
    asked = re.findall(r"[^\n?.!:]*\?", text)
    question = " ".join((asked[-1] if asked else text).split())
    return question[:100]


# a reply from recall saying, in the agent's words, that its memories do not hold the answer (beside the readers'
# declines, :func:`~pagemind.answering.support.declined`, which speak of a text)
_NOT_TOLD = re.compile(
    r"\b(?:memor(?:y|ies)(?:\s+above)?\s+(?:do|does|did)\s*(?:not|n['’]t)\s+(?:say|tell|mention|show|hold|include)|"
    r"(?:not|nothing)\s+(?:is\s+)?(?:in|about\s+(?:it|this|that)\s+in)\s+(?:my|the|your)\s+memor(?:y|ies)|"
    r"not\s+mentioned\s+in\s+the\s+memor(?:y|ies)|I\s+have\s+no\s+(?:record|memory|information)|"
    r"I\s+(?:do|did)\s*(?:not|n['’]t)\s+have\s+(?:that|this|any|the|enough)\s+(?:information|record|details?|memory)|"
    r"you\s+(?:have|had)\s*(?:not|n['’]t)\s+(?:told|mentioned|said|shared))", re.IGNORECASE)
_CALLED = re.compile(r"^send_message\s*(?::\s*(?P<said>.*)|\(\s*(?:message\s*=\s*)?(?P<arg>.*?)"
                     r"(?:\s*,\s*request_heartbeat\s*=\s*\w+)?\s*\)\s*)$", re.IGNORECASE | re.DOTALL)


def _unwrapped(reply: str) -> str:
    """A plain reply as the message it sends: a reply written as the step format's call ("send_message: Senior
    editor", 'send_message("Leeds")' — the evaluated agent's message names the function) is read as its message."""
    if reply.lstrip().startswith("{"):  # the step format itself
        try:
            action = parse_action(reply)
        except InvalidAction:
            return reply
        return str(action.arguments.get("message", reply)) if action.function == "send_message" else reply
    called = _CALLED.match(reply.strip())
    if called is None:
        return reply
    said = (called.group("said") if called.group("said") is not None else called.group("arg")).strip()
    if len(said) >= 2 and said[0] == said[-1] and said[0] in "\"'":
        said = said[1:-1].strip()
    return said


# a question of which came first: "Which did I start first, pottery classes or the Spanish course?"
_ORDER_ASKED = re.compile(r"\bwhich\b[^?]*\b(?:first|earlier|earliest|sooner)\b|"
                          r"\bin\s+(?:what|which)\s+order\b|\b(?:first|earlier|before)\s*,?\s+[^?]+\s+or\s+",
                          re.IGNORECASE)


def _shown_order(order: str) -> str:
    """How the recalled lines' order is named where they are shown (each line is dated)."""
    return "the best match first" if order == "rank" else "the most recent first"


def _aged(line: str, time: str, now: str) -> str:
    """A recalled line (``[time] ...``) with how long before ``now`` its time was inside its brackets:
    "[2023-05-20 11:00, 28 days (4 weeks) before now] user: I adopted a cat today"."""
    age = elapsed(time, now)
    end = line.find("]")
    return line if age is None or not line.startswith("[") or end < 0 else f"{line[:end]}, {age}{line[end:]}"


def _said(event: Event) -> str:
    """A message of the conversation as the reply from recall reads it: the user's as recall shows it
    (:meth:`Event.describe`), the agent's sent message without the thoughts its step describes with it."""
    if event.kind == "user_message":
        return event.describe()
    return f"[{event.time[:16]}] assistant: {event.payload.get('arguments', {}).get('message', '')}"


def _with(step: Step, heartbeat: str) -> Step:
    return Step(**{**step.__dict__, "heartbeat": heartbeat})
