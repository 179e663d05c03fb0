"""MemGPT as an evaluation method: one fresh agent per example, its memory filled the way the paper does.

* Key-value sets: every pair is an archival passage ``Key-value pair: key = K, value = V``, searched by text,
  10 results per page, ``levels + 5`` steps (MemGPT's ``nested_kv.py`` setting, as benchmarks/memgpt.py ran it).
* Documents: the document in archival storage in ~300-word passages (the paper's document analysis).
* Conversations (LoCoMo, MSC, MTBench+): the whole conversation in recall storage, out of context (the paper's
  deep-memory-retrieval setting), so the agent must search it. A conversation between two people the agent only
  read (LoCoMo) keeps each speaker's turns as theirs, citable — never as the agent's own replies; ``consolidate``
  reads it into archival summaries and facts first.

``budget`` (matched-cost runs) sets the agent's window to its empty prompt (system, functions, core memory)
plus ``budget`` tokens for retrieved text and messages plus the reply; recall before reply (where on) places at most
``recall_tokens`` of it. The agent is deleted after its answer
(its steps are in the answer's details); a leftover from a killed run is replaced.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, Literal

from ..agent import Agent, AgentNotFound, AgentOptions, AgentStore, passages
from ..agent.memory import CLOCK, RecallOrder
from ..answering.question import Answer, read_choice
from ..declare import option, option_of
from ..library import Library
from ..llm.client import LLM
from ..methods.options import ReaderOptions
from ..prompts import get_prompt
from ..store import SQLStore, Store
from ..text import Document
from .datasets import Example


@dataclass(frozen=True)
class MemGPTEvalOptions(ReaderOptions):
    """MemGPT's settings as an evaluated method (declared like the readers' options)."""

    owner = "memgpt"

    budget: int | None = option(None, "tokens of retrieved text and messages in one prompt", minimum=1)
    max_steps: int | None = option(None, "agent steps (none: levels + 5 for key-value sets, else 8)", minimum=1)
    page_size: int | None = option(None, "search results per page (none: 10 for key-value sets, else 5)", minimum=1)
    archival_search: Literal["text", "semantic", "hybrid"] | None = option(
        None, "archival search (none: text for key-value sets, else hybrid)")
    embedder: Literal["auto", "minilm", "hashing", "none"] = option(
        "auto", "archival embeddings for documents (MiniLM if installed)")
    passage_words: int = option(300, "words per archival passage of a document", minimum=1)
    recall_first: bool = option_of(AgentOptions, "recall_first", default=False,
                                   note="off here, on for new agents: the paper's agent is what is evaluated unless "
                                        "asked")
    recall_answer: bool = option_of(AgentOptions, "recall_answer")
    recall_order: RecallOrder = option_of(AgentOptions, "recall_order")
    recall_tokens: int = option_of(AgentOptions, "recall_tokens",
                                   note="filling a 1,500-token budget with it took the default model's LoCoMo F1 "
                                        "on 17 questions from 0.056 to 0.022: it sent the question back")
    consolidate: bool = option(False, "read the imported conversation as the background pass does before the "
                                      "question (dated summaries and facts in archival memory; model calls per "
                                      "~900 words), the write side without the model's initiative")
    preset: str | None = option(None, "accepted for symmetry with the readers; unused")


class MemGPTEval:
    """``answer_example(example) -> Answer`` with a fresh agent; no memory is shared between examples."""

    name = "memgpt"

    def __init__(self, llm: LLM, store: SQLStore, **options: Any) -> None:
        self.llm = llm
        self.store = AgentStore(store)
        self.options = MemGPTEvalOptions.create(**options)
        self._base: dict[AgentOptions, int] = {}

    def agent_options(self, example: Example) -> AgentOptions:
        o = self.options
        kv = example.task == "kv" and bool(example.passages)
        levels = int(example.meta.get("levels", 1))
        opts = AgentOptions(
            max_steps=o.max_steps or (levels + 5 if kv else 8),
            page_size=o.page_size or (10 if kv else 5),
            archival_search=o.archival_search or ("text" if kv else "hybrid"),
            embedder="none" if kv else o.embedder,  # a conversation's recall is ranked with MiniLM too
            constrained=o.constrained,
            **o.passed_to(AgentOptions),
        )
        if o.budget is not None:
            opts = replace(opts, context_window=self._empty_prompt(opts) + o.budget + opts.max_tokens)
        return opts

    def _empty_prompt(self, opts: AgentOptions) -> int:
        """Tokens of a new agent's first prompt (instructions, functions, core memory, boot messages)."""
        if opts not in self._base:
            probe = Agent.create(self.llm, Store(":memory:"), "probe", options=replace(opts, embedder="none"))
            self._base[opts] = probe.main_context().build().tokens
        return self._base[opts]

    def _agent(self, example: Example, opts: AgentOptions) -> Agent:
        digest = hashlib.sha256(f"{example.dataset}/{example.id}/{asdict(self.options)}".encode()).hexdigest()
        name = f"eval-{digest[:24]}"
        try:
            self.store.delete_agent(name)  # a leftover of a run that was killed mid-example
        except AgentNotFound:
            pass
        speakers = [s for s in example.meta.get("speakers") or [] if s]
        persona = (f"I keep the memory of the conversations between {speakers[0]} and {speakers[1]}, and answer "
                   "questions about them." if len(speakers) == 2 else None)
        # LongMemEval: the question is asked at its date; a dated conversation (LoCoMo): right after its last turn,
        # so "when" is read against the conversation's dates, not today's
        asked = example.meta.get("asked_at") or max((t.time for t in example.conversation if t.time), default=None)
        clock = (lambda: datetime.strptime(asked, CLOCK)) if asked else None
        agent = Agent.create(self.llm, self.store, name, persona=persona, options=opts, clock=clock)
        if example.conversation:
            # two people talking (LoCoMo): each one's turns told to the agent under their name, none its own
            agent.import_messages([("user" if speakers else t.role, t.text, t.time or agent.now(), t.where,
                                    t.speaker if speakers else "") for t in example.conversation if t.text])
            if self.options.consolidate:
                agent.consolidate()
        else:
            texts = list(example.passages) or passages(example.document, self.options.passage_words)
            agent.archive.insert(texts, agent.now(), source=example.document_id)
        return agent

    def message(self, example: Example) -> str:
        options = example.as_question().options_block() if example.options else ""
        if example.task == "kv" and example.passages:
            return get_prompt("eval", "memgpt.kv").render(key=example.meta["key"])
        if example.conversation:
            return get_prompt("eval", "memgpt.conversation").render(question=example.question, options=options)
        return get_prompt("eval", "memgpt.document").render(name=example.document_id, question=example.question,
                                                            options=options)

    def answer_example(self, example: Example) -> Answer:
        from ..answering.support import abstains

        opts = self.agent_options(example)
        agent = self._agent(example, opts)
        try:
            turn = agent.say(self.message(example))
        finally:
            self.store.delete_agent(agent.name)
        question = example.as_question()
        text = turn.messages[-1] if turn.messages else ""
        read = read_choice(text, question) if question.is_choice else None
        choice = read.index if read is not None else None
        fallbacks = [] if turn.messages else [f"the agent sent no message (stopped: {turn.stop_reason})"]
        if self.options.abstain_precision is not None and turn.support is not None:
            fallbacks.append("abstain_precision: the agent's replies have no fitted confidence; counted as withheld "
                             "where the support check finds them unsupported")
        if turn.stop_reason == "last_step":
            fallbacks.append("the agent answered only on its last step, when send_message was the one function left")
        if question.is_choice and turn.messages and choice is None:
            fallbacks.append(f"no option named in the agent's message ({read.problem if read else ''})")
        return Answer(
            question=question, method="memgpt", text=question.options[choice] if choice is not None else text,
            choice=choice, trace=turn.trace, fallbacks=fallbacks,
            citations=list(getattr(turn, "citations", None) or []),  # the passages and messages the agent used
            support=turn.support,  # its reply against what its searches returned (None: it searched nothing)
            probability=turn.probability,  # a reply from recall's own probability, where the backend gives it
            would_abstain=turn.support is not None and abstains("on", False, turn.support),
            details={"valid_action_rate": round(turn.valid_action_rate, 4), "steps": len(turn.steps),
                     "valid_actions": turn.valid_actions, "stop_reason": turn.stop_reason,
                     "functions": [s.function for s in turn.steps], "evictions": turn.evictions,
                     "max_prompt_tokens": max((s.prompt_tokens for s in turn.steps), default=0),
                     "window": opts.context_window, "messages": turn.messages},
        )


def document_of(example: Example) -> Document | Library:
    """What a reader method builds its memory from: the example's document, or the library it is asked of."""
    if example.library:
        return Library(example.document_id, tuple(Document.from_text(text, name=name)
                                                  for name, text in example.library))
    if example.read is not None:  # a file's reading: its pages, sections and format, as `pagemind ask FILE` has them
        return replace(example.read, name=example.document_id)
    return Document.from_text(example.document, name=example.document_id)


__all__ = ["MemGPTEval", "MemGPTEvalOptions", "document_of"]
