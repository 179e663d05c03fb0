"""The service layer of ``pagemind serve``: every operation the HTTP API and the MCP tools offer, written once.

Each operation takes the acting user and checked values (:mod:`.shapes`), and returns JSON-ready values or a
started run (its row and the future of its result). The transports only translate: HTTP routes (:mod:`.app`,
:mod:`.agents`) and MCP tools (:mod:`.mcp`) parse their arguments into the same shapes, call the same operation
and render the same JSON, so a check, a limit or a tenancy rule cannot be forgotten on one of them. Runs execute on
one worker pool with one FIFO line per agent (:mod:`.workers`), whichever transport started them.

Blocking: every operation may touch the store or the model; callers on an event loop run them in a thread.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import steps
from ..agent.locks import AgentBusy
from ..answering.question import Question, ReplySettings
from ..conversation import Turn
from ..errors import ConfigError, InputError, NotFound, PagemindError
from ..runs import summarize
from ..users import agent_key, agent_name
from .shapes import (
    AgentCreate,
    AskRequest,
    IndexRequest,
    LoadDocument,
    search_json,
)
from .workers import Workers

if TYPE_CHECKING:
    from ..agent.archive import Added
    from ..agent.memory import AgentOptions, Block, BlockVersion, Event, Passage
    from ..api import Pagemind
    from ..library import Change
    from ..llm.base import Capabilities
    from ..retrieval.embed import Embeddings
    from ..store import (
        AgentRow,
        DocumentRow,
        LibraryDocumentRow,
        LibraryRow,
        MemoryContent,
        MemoryRecord,
        RunRow,
        StepRow,
        UserRow,
    )
    from ..text import Document

Progress = Callable[[str, int, int, str], None]
# bytes: a longer message is checked against the agent's window before its run exists; a shorter one by the turn
# itself (Agent.say refuses it before storing it), which spares every ordinary send loading the agent twice
SHORT_MESSAGE = 1024
CONTEXT_CHARS = 600  # a cited span is shown with its paragraphs, at most this many characters either side


@dataclass(frozen=True)
class Started:
    """A run the service started: its row (queued) and the future of its result."""

    run: Any
    future: Future


@dataclass(frozen=True)
class AgentView:
    """One of a user's agents as every surface shows it (pagemind's JSON, Letta's ``AgentState``, MCP): its row,
    the user's own name for it, options, core-memory blocks, counts, whether a turn holds it, and the model that
    runs it, named by its identity (never where it is served)."""

    row: AgentRow
    name: str
    options: AgentOptions
    blocks: tuple[Block, ...]
    counts: dict[str, int]
    busy: bool
    running: str | None
    model: str


def keyed_run_id(user_id: int, agent_id: int, key: str, attempt: int) -> str:
    """The id of attempt ``attempt`` (1, 2, ...) of the agent send with idempotency key ``key``."""
    digest = hashlib.sha256(f"{user_id}\0{agent_id}\0{key}".encode()).hexdigest()[:16]
    return f"run_{digest}" + (f"-{attempt}" if attempt > 1 else "")


def step_json(row: Any) -> dict[str, Any]:
    """A stored step in the one JSON form the API, the event streams, MCP and the viewer read."""
    return steps.as_json(steps.from_row(row))


class Service:
    """What the transports share: one :class:`~pagemind.Pagemind` (one LLM, one store), the workers, the auth
    mode and the limits."""

    def __init__(self, pm: Pagemind, *, auth: str, keepalive: float = 15.0, workers: int = 16, owned: bool = False,
                 max_body: int | None = None) -> None:
        if auth not in ("auto", "keys", "none"):
            raise ConfigError(f"auth {auth!r}: use auto, keys or none")
        self.pm = pm
        self.owned = owned
        if auth == "auto":  # keys as soon as anyone but the implicit local user exists
            auth = "keys" if pm.users.any_but_local() else "none"
        self.auth = auth
        self.keepalive = keepalive
        self.run_log = pm.runs  # the runs the event streams read
        self.workers = Workers(pm.runs, workers)
        self.max_bytes = int(pm.settings.max_bytes)
        self.max_body = int(max_body) if max_body else default_max_body(self.max_bytes)
        self.local = pm.users.local() if auth == "none" else None
        self._joinable: dict[str, list[Any]] = {}  # request key -> [Started, clients waiting on it]
        self._join_lock = threading.Lock()

    def started_once(self, key: str, start: Callable[[], Started]) -> tuple[Started, bool]:
        """The run of a request: the one an identical request (same ``key``: its user and body) started and that
        still runs — joined, so an SDK's retry after its timeout waits for the answer instead of paying for it
        again — or a new one from ``start``; and whether it was joined."""
        with self._join_lock:
            held = self._joinable.get(key)
            if held is not None and not held[0].future.done():
                held[1] += 1
                return held[0], True
            begun = start()
            self._joinable[key] = [begun, 1]
        begun.future.add_done_callback(lambda _: self._release(key, begun))
        return begun, False

    def _release(self, key: str, begun: Started) -> None:
        with self._join_lock:
            if key in self._joinable and self._joinable[key][0] is begun:
                del self._joinable[key]

    def left(self, user: UserRow, key: str, begun: Started) -> None:
        """A client of ``begun`` went away (disconnected, cancelled its stream): the run is cancelled when no other
        client waits on it (it stops at its next step, or in the middle of a streamed answer)."""
        with self._join_lock:
            held = self._joinable.get(key)
            waiting = 0 if held is None or held[0] is not begun else held[1] - 1
            if held is not None and held[0] is begun:
                held[1] = waiting
        if waiting <= 0 and not begun.future.done():
            self.cancel(user, begun.run.id)

    def close(self) -> None:
        self.workers.shutdown()
        if self.owned:
            self.pm.close()

    # --- users ------------------------------------------------------------------------------------------------
    def user_for(self, authorization: str | None) -> UserRow | None:
        """The user of an ``Authorization: Bearer KEY`` header value (the local user without keys); None when the
        key is missing or wrong."""
        if self.local is not None:
            return self.local
        scheme, _, key = (authorization or "").strip().partition(" ")
        return self.pm.users.authenticate(key.strip()) if scheme.lower() == "bearer" else None

    def me(self, user: UserRow) -> dict[str, Any]:
        return {"id": user.id, "name": user.name, "auth": self.auth}

    def export(self, user: UserRow) -> dict[str, Any]:
        return self.pm.users.export(user.id)

    def erase(self, user: UserRow) -> dict[str, int]:
        return self.pm.users.erase(user.id)

    @property
    def model(self) -> str:
        """The model the service runs, by its identity (``openai:NAME``, ``gguf:NAME:DIGEST``): what users see,
        never the server's URL or credentials."""
        return str(self.pm.llm.model_identity)

    def capabilities(self) -> Capabilities:
        """What the model behind the service can do (constrained JSON, grammars, tools, its window)."""
        caps: Capabilities = self.pm.llm.backend.capabilities
        return caps

    def models(self) -> dict[str, Any]:
        backend = self.pm.llm.backend
        return {"model": self.model, "backend": type(backend).__name__, "capabilities": asdict(backend.capabilities)}

    # --- methods ----------------------------------------------------------------------------------------------
    @staticmethod
    def methods() -> list[dict[str, Any]]:
        from ..methods import registry

        return [{**cls.describe_method(), "unit": cls.unit, "schema": cls.Options.json_schema()}
                for cls in registry.all_readers()]

    @staticmethod
    def check_method(method: str, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` of ``method`` checked against its declaration: an unknown method, an option it does not
        take (naming the methods that do) or a refused value is a :class:`ConfigError` before any run exists."""
        from ..methods import registry
        from ..methods.base import Chooser

        if method not in registry.names():
            raise ConfigError(f"unknown method {method!r} (have: {', '.join(registry.names())})")
        cls = registry.get(method)
        # a choice (auto) takes its own options and those of the methods it may pick, for the pick
        declarations = [cls.Options] + ([r.Options for r in cls.readers().values()]
                                        if issubclass(cls, Chooser) else [])
        specs = {s.name: s for d in reversed(declarations) for s in d.specs()}
        for name in options:
            if name in specs:
                continue
            owners = [m for m in registry.document_methods()
                      if name in {s.name for s in registry.get(m).Options.specs()}]
            if owners:
                raise ConfigError(f"method option {name} applies to {', '.join(owners)}, not {method}")
            raise ConfigError(f"unknown method option {name!r} (GET /v1/methods, list_methods: each method's options)")
        given = {k: json_int(v) if specs[k].type is int else v for k, v in options.items() if v is not None}
        for declaration in declarations:  # each value checked by every declaration that takes it
            declaration.create(**{k: v for k, v in given.items() if k in {s.name for s in declaration.specs()}})
        return given

    # --- documents --------------------------------------------------------------------------------------------
    def add_document(self, user: UserRow, source: str | Path | bytes, name: str | None,
                     encoding: str | None = None) -> DocumentRow:
        return self.pm.add_document(source, name, user_id=user.id, encoding=encoding or "utf-8")

    def documents(self, user: UserRow) -> list[DocumentRow]:
        return self.pm.documents(user.id)

    def document(self, user: UserRow, doc_id: str) -> tuple[DocumentRow, list[MemoryRecord]]:
        """The document with the memories the user's own requests built of it."""
        return self.pm.user_document(doc_id, user.id), self.pm.memories(doc_id, user_id=user.id)

    def remove_document(self, user: UserRow, doc_id: str) -> None:
        self.pm.remove_document(doc_id, user.id)

    def sections(self, user: UserRow, doc_id: str) -> Document:
        """One of the user's documents as it was read: its own structure (format, pages, sections)."""
        return self.pm.open_document(doc_id, user_id=user.id)

    def memory(self, user: UserRow, doc_id: str, key: str) -> MemoryContent:
        """One of the user's memories of the document with its stored items (pages, gists, tree nodes,
        fragments); another user's memory of the same text is not found."""
        return self.pm.memory(doc_id, key, user_id=user.id)

    def _memory_of(self, user: UserRow, doc_id: str, method: str) -> Any:
        """The user's finished memory of a document built by ``method`` (the memory kind: ReadAgent's three methods
        share one), the most recently updated; :class:`NotFound` when there is none yet."""
        from ..methods import registry

        kind = getattr(registry.get(method), "memory_kind", None) if method in registry.names() else None
        if kind is None:
            raise InputError(f"{method!r} keeps no memory to show (readagent-p, readagent-s, gistmem, memwalker, "
                             "rag, op-rag do)")
        found = [m for m in self.pm.memories(doc_id, user_id=user.id) if m.method == kind and m.status == "complete"]
        if not found:
            raise NotFound(f"no {kind} memory of document {doc_id!r} yet: ask it (or index it) with {method} first")
        return found[0]

    def structure(self, user: UserRow, doc_id: str, method: str = "readagent-p") -> dict[str, Any]:
        """A memory's structure: ReadAgent's pages with their gists and sizes, MemWalker's tree (every node's id,
        level, children and summary), or the fragments with their sizes and places."""
        record = self._memory_of(user, doc_id, method)
        items = self.pm.memory(doc_id, record.key, user_id=user.id).items
        out: dict[str, Any] = {"document_id": doc_id, "method": record.method, "key": record.key}
        if record.method == "readagent":
            gists = {g["page"]: g["text"] for g in items.get("gist", [])}
            out["pages"] = [{"page": p["index"], "words": len(p["text"].split()), "gist": gists.get(p["index"], "")}
                            for p in items.get("page", [])]
        elif record.method == "memwalker":
            out["nodes"] = [{k: n[k] for k in ("id", "index", "level", "children", "summary")}
                            for n in items.get("node", [])]
        else:
            out["fragments"] = [{"fragment": f["index"], "words": len(f["text"].split()), "start": f.get("start"),
                                 "end": f.get("end")} for f in items.get("fragment", [])]
        return out

    def units(self, user: UserRow, doc_id: str, which: str, method: str = "readagent-p") -> dict[str, Any]:
        """Units of a memory by number (``which``: ``3``, ``3-7``, ``1,4,9``): ReadAgent's pages with their gists,
        MemWalker's leaves with their summaries, or fragments; each with its text."""
        record = self._memory_of(user, doc_id, method)
        wanted = numbers(which)
        items = self.pm.memory(doc_id, record.key, user_id=user.id).items
        if record.method == "readagent":
            gists = {g["page"]: g["text"] for g in items.get("gist", [])}
            found = [{"unit": "page", "index": p["index"], "text": p["text"], "gist": gists.get(p["index"], "")}
                     for p in items.get("page", []) if p["index"] in wanted]
        elif record.method == "memwalker":
            found = [{"unit": "leaf", "index": n["index"], "id": n["id"], "text": n["text"], "summary": n["summary"]}
                     for n in items.get("node", []) if n["level"] == 0 and n["index"] in wanted]
        else:
            found = [{"unit": "fragment", "index": f["index"], "text": f["text"]}
                     for f in items.get("fragment", []) if f["index"] in wanted]
        missing = sorted(wanted - {u["index"] for u in found})
        if missing:
            raise NotFound(f"the {record.method} memory of {doc_id!r} has no unit {missing[0]}")
        return {"document_id": doc_id, "method": record.method, "units": found}

    # --- libraries --------------------------------------------------------------------------------------------
    def libraries(self, user: UserRow) -> list[LibraryRow]:
        return self.pm.libraries(user_id=user.id)

    def default_library(self, user: UserRow) -> str:
        """The library a request that names nothing to read reads (a chat UI's menu pick): the user's only library,
        or the one named ``default``; an :class:`InputError` saying how to name one otherwise."""
        names = [row.name for row in self.libraries(user)]
        if len(names) == 1 or "default" in names:
            return names[0] if len(names) == 1 else "default"
        raise InputError('name what to read: "pagemind": {"document_id": "..."} or {"library": "..."} (extra_body), '
                         "the model pagemind/<method>@<library>, or keep one library (or one named 'default') for "
                         f"requests that name none (you have {len(names)})")

    def embed(self, user: UserRow, texts: Sequence[str]) -> Embeddings:
        """The embedded encoder's vector of each text (:meth:`Pagemind.embed`); no run, nothing stored."""
        return self.pm.embed(texts)

    def housekeeping(self, user: UserRow, messages: Sequence[tuple[str, str]],
                     reply: ReplySettings | None = None) -> Any:
        """A chat UI's own task (a title, tags, follow-up questions for its menu) answered by the model directly:
        not a question about a library, not a recorded run; the response."""
        from ..llm.base import LLMRequest, Message
        from ..llm.usage import Trace

        roles: dict[str, Literal["system", "user", "assistant"]] = {"system": "system", "developer": "system",
                                                                     "user": "user", "assistant": "assistant"}
        request = LLMRequest(messages=tuple(Message(roles[role], text) for role, text in messages if role in roles),
                             role="housekeeping",
                             max_tokens=min(256, reply.max_tokens if reply and reply.max_tokens else 256))
        if reply is not None:
            request = replace(reply, json_schema=None, max_tokens=None).applied(request)
        response, _ = self.pm.llm.scoped(self.pm.scope(user.id)).complete(request, Trace())
        return response

    def library(self, user: UserRow, name: str) -> tuple[LibraryRow, list[LibraryDocumentRow]]:
        """One of the user's libraries with its documents (:class:`NotFound` for a name that is not theirs)."""
        return self.pm.library_row(name, user_id=user.id), self.pm.library_documents(name, user_id=user.id)

    def add_to_library(self, user: UserRow, name: str, source: str | Path | bytes | None, doc_name: str | None,
                       encoding: str | None = None, document_id: str | None = None) -> Change:
        """Put a document in the library ``name`` (made when new): an upload or text (as :meth:`add_document`
        reads them), or one of the user's documents by id; ``doc_name`` its name there. Returns what changed."""
        if document_id is not None:
            found = self.pm.open_document(document_id, user_id=user.id)
            document = replace(found, name=doc_name or found.name)
        else:
            assert source is not None
            document = self.pm.read(source, doc_name, encoding=encoding or "utf-8")
        (change,), _ = self.pm.add(name, [document], user_id=user.id)
        return change

    def remove_from_library(self, user: UserRow, name: str, doc_name: str | None = None) -> list[str]:
        return self.pm.remove(name, [doc_name] if doc_name else [], user_id=user.id)

    # --- index and ask ----------------------------------------------------------------------------------------
    def source(self, user: UserRow, doc_id: str | None = None, library: str | None = None) -> Any:
        """What a request reads: one of the user's documents, or one of their libraries."""
        if library is not None:
            return self.pm.library(library, user_id=user.id)
        assert doc_id is not None
        return self.pm.open_document(doc_id, user_id=user.id)

    def index(self, user: UserRow, doc_id: str | None, body: IndexRequest, progress: Progress | None = None, *,
              library: str | None = None) -> Started:
        document = self.source(user, doc_id, library)
        options = self.check_method(body.method, body.options)
        run = self.pm.runs.create("index", document.id, method=body.method, user_id=user.id,
                                  request={"document": document.name, "options": options})
        return Started(run, self.workers.submit(run.id, lambda: self.pm.index(
            document, body.method, progress, run=run, user_id=user.id, **options)))

    def ask(self, user: UserRow, doc_id: str | None, body: AskRequest, progress: Progress | None = None, *,
            library: str | None = None, on_text: Callable[[str], None] | None = None,
            reply: ReplySettings | None = None, conversation: Sequence[Turn] = ()) -> Started:
        """Answer about one of the user's documents (``doc_id``) or libraries (``library``), on the worker pool;
        ``reply``: the asker's settings of the answer call (OpenAI's ``max_tokens``, ``temperature``...);
        ``conversation``: the turns before the question (:meth:`Pagemind.ask`)."""
        document = self.source(user, doc_id, library)
        options = dict(body.method_options)
        if body.budget is not None:
            options["budget"] = body.budget
        options = self.check_method(body.method, options)
        question = replace(Question.parse(body.question, tuple(body.options)), reply=reply)
        run = self.pm.runs.create("ask", document.id, method=body.method, user_id=user.id, request={
            "document": document.name, "question": body.question, "options": body.options, "method_options": options,
            **({"reply": asdict(reply)} if reply is not None else {}),
            **({"conversation": [asdict(t) for t in conversation]} if conversation else {})})
        return Started(run, self.workers.submit(run.id, lambda: self.pm.ask(
            document, question, (), body.method, progress=progress, on_text=on_text, run=run,
            user_id=user.id, conversation=conversation, **options)))

    @staticmethod
    def answer_json(run: Any, answer: Any, **extra: Any) -> dict[str, Any]:
        return {"run_id": run.id, **answer.as_dict(), **extra}

    # --- runs -------------------------------------------------------------------------------------------------
    def find_run(self, user: UserRow, run_id: str) -> RunRow | None:
        """One of the user's runs, or None."""
        return self.pm.runs.get(run_id, user.id)

    def current_run(self, run: RunRow) -> RunRow:
        """A run as it is now (its live state, e.g. the progress of a build), from the run the caller holds."""
        return self.pm.runs.peek(run.id) or run

    def own_run(self, user: UserRow, run_id: str) -> RunRow:
        run = self.find_run(user, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        return run

    def runs(self, user: UserRow, *, kind: str | None = None, status: str | None = None, target: str | None = None,
             limit: int = 50, offset: int = 0) -> list[RunRow]:
        return self.pm.runs.list(user.id, kind=kind, status=status, target=target, limit=limit, offset=offset)

    def run(self, user: UserRow, run_id: str) -> tuple[RunRow, dict[str, Any]]:
        """One of the user's runs and its usage over every step."""
        return self.own_run(user, run_id), summarize(self.pm.runs.steps(run_id))

    def steps(self, user: UserRow, run_id: str, after: int = -1, limit: int | None = None) -> list[Any]:
        self.own_run(user, run_id)
        return list(self.pm.runs.steps(run_id, after, limit))

    def trace(self, user: UserRow, run_id: str, after: int = -1,
              limit: int = 200) -> tuple[RunRow, dict[str, Any], list[StepRow]]:
        """A run, its usage over every step, and its steps after ``after`` (at most ``limit``)."""
        run = self.own_run(user, run_id)
        every = self.pm.runs.steps(run_id)
        return run, summarize(every), [s for s in every if s.seq > after][:limit]

    def citation(self, user: UserRow, run_id: str, n: int, radius: int = CONTEXT_CHARS) -> dict[str, Any]:
        """Citation ``n`` (from 1, as the answer's markers ``[n]`` number them) of one of the user's runs, in its
        place: the text around it (the paragraphs holding the span, cut to ``radius`` characters either side), where
        that window starts in the cited text, and every citation of the run inside the window as spans of it.
        :class:`NotFound` for another user's run, a run without that citation, or a cited text that is gone."""
        run = self.own_run(user, run_id)
        cited = [c for c in ((run.result or {}).get("citations") or []) if isinstance(c, dict)]
        if not 1 <= n <= len(cited):
            raise NotFound(f"run {run_id!r} has no citation {n} (it has {len(cited)})")
        chosen = cited[n - 1]
        text = self._cited_text(user, run, chosen)
        start, end = _clamped(chosen, text)
        lo, hi = window(text, start, end, radius)
        spans = []
        for k, other in enumerate(cited, 1):
            if k != n and not _same_text(chosen, other):
                continue
            a, b = _clamped(other, text)
            if (a < hi and b > lo) or k == n:
                spans.append({"n": k, "start": max(a, lo) - lo, "end": min(b, hi) - lo})
        shown = text[lo:hi]
        return {"run_id": run.id, "n": n, "citation": chosen, "text": shown, "offset": lo, "chars": len(text),
                "spans": spans, "marked": marked(shown, spans, n)}

    def _cited_text(self, user: UserRow, run: Any, cited: dict[str, Any]) -> str:
        """The text a citation's offsets point into: its document's (one of the user's), or for an agent's turn the
        archival passage's or recall message's own text."""
        if cited.get("unit") in ("passage", "message") and run.kind == "turn":
            from ..agent.evidence import message_text

            row = self.own_agent(user, int(run.target))
            agent = self.pm.agent(row.name, llm=False)
            index = int(cited.get("index") or 0)
            if cited["unit"] == "passage":
                found = agent.passages_by_id([index])
                if found:
                    return str(found[0].text)
            else:
                events = agent.events_by_seq([index])
                if events:
                    return message_text(events[0])
            raise NotFound(f"the cited {cited['unit']} {index} is no longer in the agent's memory")
        return str(self.pm.open_document(str(cited.get("document")), user_id=user.id).text)

    def cancel(self, user: UserRow, run_id: str) -> RunRow:
        """Ask one of the user's runs to stop (at its next step, or mid-answer); the run as it is now."""
        self.own_run(user, run_id)
        self.pm.runs.cancel(run_id)
        return self.own_run(user, run_id)

    # --- agents -----------------------------------------------------------------------------------------------
    def own_agent(self, user: UserRow, ref: int | str) -> AgentRow:
        """The user's agent row by id (HTTP) or by its own name (MCP); :class:`NotFound` for another user's."""
        return self.pm.user_agent(ref, user.id)

    def agent_view(self, user: UserRow, row: AgentRow) -> AgentView:
        agent = self.pm.agent(row.name, llm=False)
        busy, running = self.workers.busy(row.id)
        return AgentView(row, agent_name(user.id, row.name), agent.options, tuple(agent.blocks()), agent.counts(),
                         busy, running, self.model)

    def agent(self, user: UserRow, ref: int | str) -> AgentView:
        return self.agent_view(user, self.own_agent(user, ref))

    def create_agent(self, user: UserRow, body: AgentCreate) -> AgentView:
        return self.agent_view(user, self.new_agent(user, body.name, persona=body.persona, human=body.human,
                                                    options=body.options))

    def new_agent(self, user: UserRow, name: str, *, persona: str | None = None, human: str | None = None,
                  options: dict[str, Any] | None = None, blocks: dict[str, str] | None = None,
                  limits: dict[str, int] | None = None, descriptions: dict[str, str] | None = None) -> AgentRow:
        """A new agent of the user's (its row): ``options`` checked as AgentOptions fields; ``blocks``, ``limits``
        and ``descriptions``: more core-memory blocks, a block's own character limit and what it is for, by
        label."""
        from ..agent import AgentExists
        from ..agent.memory import AgentOptions

        checked = checked_agent_options(AgentOptions().as_dict(), options or {})
        try:
            agent = self.pm.create_agent(agent_key(user.id, name), persona=persona, human=human, options=checked,
                                         user_id=user.id, display_name=name, blocks=blocks, limits=limits,
                                         descriptions=descriptions)
        except AgentExists:
            raise AgentNameTaken(f"you already have an agent named {name!r}") from None
        return self.own_agent(user, agent.id)

    def agents(self, user: UserRow, *, name: str | None = None, after: int | None = None, before: int | None = None,
               limit: int | None = None) -> list[AgentView]:
        """The user's agents by id (``name``: only the one the user calls so); one page by id cursor when asked:
        only that page's agents are read."""
        if name is not None:
            try:
                return [self.agent_view(user, self.own_agent(user, name))]
            except NotFound:
                return []
        return [self.agent_view(user, row) for row in self.pm.agents(user.id, after=after, before=before, limit=limit)]

    def in_line(self, row: AgentRow, job: Callable[[], Any]) -> Future:
        """A job without a run (an edit) in the agent's line, so it never interleaves with a turn."""
        return self.workers.enqueue(row.id, lambda: (None, job))[1]

    def update_agent(self, user: UserRow, ref: int | str, changes: dict[str, Any]) -> Future:
        row = self.own_agent(user, ref)

        def job() -> AgentView:
            agent = self.pm.agent(row.name, llm=False)
            agent.update_options(checked_agent_options(agent.options.as_dict(), changes))
            return self.agent(user, row.id)

        return self.in_line(row, job)

    def delete_agent(self, user: UserRow, ref: int | str) -> None:
        row = self.own_agent(user, ref)
        busy, running = self.workers.busy(row.id)
        if busy:
            raise AgentBusy("the agent is in a turn; delete it when the turn is over", running)
        self.pm.delete_agent(row.name)

    def send(self, user: UserRow, ref: int | str, message: str, *, run_id: str | None = None, key: str | None = None,
             wait: bool = True, progress: Progress | None = None, on_step: Callable[[Any], None] | None = None,
             then: Callable[[Any, Any], Any] | None = None) -> Started:
        """A user message's turn at the end of the agent's line (turns of one agent run one at a time, in arrival
        order, whichever transport sent them). A message that cannot fit the agent's window is refused here,
        before a run or the message is stored; so is a ``wait=False`` send to a busy agent (:class:`AgentBusy`).
        ``on_step(agent)`` runs after each step, ``then(agent, result)`` after the turn, both still in the agent's
        line (what they read of the agent is this turn's); the run's result is ``then``'s."""
        row = self.own_agent(user, ref)
        # wait=False: a live turn of this agent in another process holds its lock (a dead holder's lock is free)
        if not wait and not self.workers.busy(row.id)[0] and self.pm.agent(row.name, llm=False).in_turn():
            found = self.pm.runs.list(user.id, kind="turn", target=str(row.id), status="running", limit=1)
            raise AgentBusy("the agent is in a turn; send again later, or without wait=false to queue",
                            found[0].id if found else None)
        if len(message.encode("utf-8")) > SHORT_MESSAGE:  # only a long message can be over the window by itself
            self.pm.agent(row.name).check_message(message)
        made: list[Any] = []

        def turn() -> tuple[str, Callable[[], Any]]:
            run = self.pm.runs.create("turn", str(row.id), method="memgpt", user_id=user.id, run_id=run_id,
                                      request={"agent": agent_name(user.id, row.name), "message": message,
                                               **({"idempotency_key": key} if key is not None else {})})
            made.append(run)
            def job() -> Any:
                agent = self.pm.agent(row.name, user_id=user.id)
                result = self.pm.send(agent, message, run=run, user_id=user.id, key=key, progress=progress,
                                      on_step=on_step if on_step is None else (lambda step: on_step(agent)))
                return result if then is None else then(agent, result)  # still in the agent's line

            return run.id, job

        _, future = self.workers.enqueue(row.id, turn, wait=wait)
        return Started(made[0], future)

    def export_agent(self, user: UserRow, ref: int | str) -> dict[str, Any]:
        """The agent as an Agent File (``.af``), under the user's own name for it."""
        row = self.own_agent(user, ref)
        return self.pm.export_agent(row.name, shown_as=agent_name(user.id, row.name), model=self.model)

    def import_agent(self, user: UserRow, data: bytes | str | dict[str, Any], *, name: str | None = None,
                     skip_unsupported: bool = False, copy: bool = False) -> list[tuple[AgentView, Any]]:
        """The agents of an Agent File, made the user's: each with its plan (what was left out, ``dropped``, and
        read but not kept, ``notes``); ``copy``: a taken name gets a free one (:meth:`Pagemind.import_agent`)."""
        plans = self.pm.import_agent(data, name=name, skip_unsupported=skip_unsupported, user_id=user.id, copy=copy)
        return [(self.agent(user, plan.name), plan) for plan in plans]

    def attempts(self, user: UserRow, agent_id: int, key: str, message: str) -> tuple[Any, int]:
        """The latest attempt of an idempotent send (an interrupted one reported failed) and the next attempt's
        number; the same key with another message is an :class:`InputError`."""
        latest, attempt = None, 1
        while (found := self.pm.runs.get(keyed_run_id(user.id, agent_id, key, attempt), user.id)) is not None:
            if found.request.get("message") != message:
                raise InputError("this Idempotency-Key was used for another message")
            latest, attempt = found, attempt + 1
        return latest, attempt

    def history(self, user: UserRow, ref: int | str, offset: int = 0, limit: int = 50) -> tuple[int, list[Event]]:
        """(every event in the agent's recall, the events ``offset`` .. ``offset + limit``), oldest first."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).history(offset, limit)

    def blocks(self, user: UserRow, ref: int | str) -> list[Block]:
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).blocks()

    def block(self, user: UserRow, ref: int | str, label: str) -> Block:
        """One core-memory block; :class:`NotFound` when the agent has none of that label."""
        found = next((b for b in self.blocks(user, ref) if b.label == label), None)
        if found is None:
            raise NotFound(f"the agent has no block {label[:40]!r}")
        return found

    def put_block(self, user: UserRow, ref: int | str, label: str, value: str | None, *, limit: int | None = None,
                  description: str | None = None, new: bool = True, via: str = "api") -> Future:
        """Set a block's value, limit and/or description (None: as it is; ``new``: or add the block), in the
        agent's line, as the label's next version caused by ``via`` (the surface) and the user; the block."""
        row = self.own_agent(user, ref)
        if not new:
            self.block(user, row.id, label)

        def job() -> Any:
            agent = self.pm.agent(row.name, llm=False)
            current = next((b.value for b in agent.blocks() if b.label == label), "")
            return agent.set_block(label, current if value is None else value, limit, description=description,
                                   cause=f"{via}: {user.name}")

        return self.in_line(row, job)

    def edit_block(self, user: UserRow, ref: int | str, label: str, *, append: str | None = None,
                   old: str | None = None, new: str | None = None, via: str = "api") -> Future:
        """Core memory edited as the agent's own functions edit it: ``append`` a line to a block, or replace ``old``
        (exactly as it is in the block) by ``new``; in the agent's line, so it never interleaves with a turn; a
        version caused by ``via`` and the user."""
        if (append is None) == (old is None):
            raise InputError("give append (a line to add) or old_content with new_content (a replacement)")
        row = self.own_agent(user, ref)

        def job() -> Any:
            agent = self.pm.agent(row.name, llm=False)
            block = next((b for b in agent.blocks() if b.label == label), None)
            if block is None:
                raise NotFound(f"agent {agent_name(user.id, row.name)!r} has no block {label!r}")
            if append is not None:
                if not append.strip():
                    raise InputError("nothing to append")
                value = f"{block.value}\n{append}" if block.value else append
            else:
                if not old or old not in block.value:
                    raise InputError(f"old_content is not in the {label} block (it must match its text exactly)")
                value = block.value.replace(old, new or "", 1)
            return agent.set_block(label, value, cause=f"{via}: {user.name}")

        return self.in_line(row, job)

    def block_history(self, user: UserRow, ref: int | str, label: str | None = None, *, before: int | None = None,
                      limit: int = 50) -> list[BlockVersion]:
        """The versions of one block (every block's: ``label`` None), newest first; :class:`NotFound` for a label
        the agent never had."""
        row = self.own_agent(user, ref)
        found = self.pm.agent(row.name, llm=False).block_history(label, before=before, limit=limit)
        if label is not None and not found and before is None:
            raise NotFound(f"the agent has no block {label[:40]!r}")
        return found

    def block_version(self, user: UserRow, ref: int | str, label: str, version: int) -> BlockVersion:
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).block_version(label, version)

    def revert_block(self, user: UserRow, ref: int | str, label: str, version: int, via: str = "api") -> Future:
        """Block ``label`` back to what version ``version`` held, as a new version (in the agent's line); the
        block and the new version's number."""
        row = self.own_agent(user, ref)
        self.block_version(user, row.id, label, version)  # NotFound before anything is queued
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).revert_block(
            label, version, cause=f"{via}: {user.name}"))

    def insert_passage(self, user: UserRow, ref: int | str, text: str, replaces: str | None = None,
                       via: str = "api") -> Added:
        """Store a passage in the agent's archival memory unless it repeats one (:meth:`Agent.remember`);
        ``replaces``: the earlier fact it supersedes. What was done."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).remember(text, source=via, replaces=replaces)

    def audit_memory(self, user: UserRow, ref: int | str, fold: bool = False) -> Future:
        """The agent's archive audited (and its repeats folded, in the agent's line): (audit, folded)."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self.pm.agent(row.name, llm=False).audit_memory(fold))

    def consolidate_memory(self, user: UserRow, ref: int | str) -> Future:
        """One consolidation pass of the agent over recall since the last (in the agent's line, with the user's
        model replies): a :class:`~pagemind.agent.consolidate.Consolidation`."""
        row = self.own_agent(user, ref)
        return self.in_line(row, lambda: self.pm.agent(row.name, user_id=user.id).consolidate())

    def passages(self, user: UserRow, ref: int | str, query: str = "", offset: int = 0,
                 limit: int = 20) -> tuple[int, list[Passage]]:
        """(how many, one page): every passage by id, or those matching ``query`` best first."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).passages(query, offset, limit)

    def passages_after(self, user: UserRow, ref: int | str, *, after: int | None = None, before: int | None = None,
                       limit: int = 50, descending: bool = False, query: str = "") -> list[Passage]:
        """One page of passages by id cursor (Letta's ``after``/``before``): at most ``limit`` read. With a
        ``query``, the matches best first, the cursor a passage of that ranking."""
        row = self.own_agent(user, ref)
        return self.pm.agent(row.name, llm=False).passages_after(after, before, limit, descending, query)

    def search_archival(self, user: UserRow, ref: int | str, query: str, page: int = 0) -> tuple[dict[str, Any], str]:
        row = self.own_agent(user, ref)
        found = self.pm.agent(row.name, llm=False).archive.search(query, page)
        return search_json(found), found.render()

    def search_recall(self, user: UserRow, ref: int | str, query: str, page: int = 0) -> tuple[dict[str, Any], str]:
        row = self.own_agent(user, ref)
        found = self.pm.agent(row.name, llm=False).tools.recall_page(query, page)
        return search_json(found), found.render()

    def load_document(self, user: UserRow, ref: int | str, body: LoadDocument) -> Future:
        from ..agent import load_into_agent

        row = self.own_agent(user, ref)
        try:
            document = self.pm.open_document(body.document_id, user_id=user.id)
        except NotFound:  # the agent is found; what the body names is not a document of the user's: bad input
            raise InputError(f"no document {body.document_id!r} of yours to load (list your documents)") from None

        def job() -> dict[str, Any]:
            loaded = load_into_agent(self.pm.agent(row.name, llm=False), document, words=body.words)
            return {"name": loaded.name, "words": loaded.words, "passages": loaded.passages}

        return self.in_line(row, job)


class AgentNameTaken(PagemindError):
    """The user already has an agent of that name (409)."""


def numbers(which: str, most: int = 200) -> set[int]:
    """``3``, ``3-7``, ``1,4,9-11`` as a set of numbers; an :class:`InputError` for anything else or over ``most``."""
    out: set[int] = set()
    for part in (p.strip() for p in which.split(",")):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise InputError(f"{which!r}: give unit numbers as 3, 3-7 or 1,4,9")
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo or hi - lo >= most or len(out) + hi - lo + 1 > most:
            raise InputError(f"{which!r}: at most {most} units, low to high")
        out.update(range(lo, hi + 1))
    return out


def json_int(value: Any) -> Any:
    """A JSON number without a fraction (``204.0``) as the integer it is, for an integer setting (JSON Schema
    counts it as one; Python's int checks do not)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def window(text: str, start: int, end: int, radius: int) -> tuple[int, int]:
    """The part of ``text`` shown around the span ``start``..``end``: the paragraphs (blank-line separated) that
    hold it, cut to at most ``radius`` characters either side of the span."""
    para = text.rfind("\n\n", 0, start)
    lo = max(0 if para < 0 else para + 2, start - radius)
    para = text.find("\n\n", end)
    hi = min(len(text) if para < 0 else para, end + radius)
    return min(lo, start), max(hi, end)


def marked(text: str, spans: list[dict[str, Any]], n: int) -> str:
    """``text`` with its cited spans marked ``<cite n="k">...</cite>`` (overlapping spans: the earlier-starting one,
    and always span ``n``)."""
    chosen = next((s for s in spans if s["n"] == n), None)
    shown = [s for s in spans if chosen is None or s is chosen
             or s["end"] <= chosen["start"] or s["start"] >= chosen["end"]]
    out, at = [], 0
    for span in sorted(shown, key=lambda s: s["start"]):
        if span["start"] < at:
            continue
        out += [text[at:span["start"]], f'<cite n="{span["n"]}">', text[span["start"]:span["end"]], "</cite>"]
        at = span["end"]
    return "".join(out) + text[at:]


def _clamped(cited: dict[str, Any], text: str) -> tuple[int, int]:
    start = min(max(0, int(cited.get("start") or 0)), len(text))
    return start, min(max(start, int(cited.get("end") or 0)), len(text))


def _same_text(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two citations' offsets point into the same text (one document; one passage or message)."""
    if a.get("unit") in ("passage", "message") or b.get("unit") in ("passage", "message"):
        return (a.get("document"), a.get("unit"), a.get("index")) == (b.get("document"), b.get("unit"), b.get("index"))
    return bool(a.get("document") == b.get("document"))


def default_max_body(max_bytes: int) -> int:
    """The JSON body limit when none is set: a document text of ``max_bytes`` written with JSON escapes, plus
    room for the other fields."""
    return 2 * max_bytes + (1 << 20)


def checked_agent_options(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` to agent options checked against their declaration (:class:`AgentOptions`): unknown names, JSON
    values of the wrong type (``"5"`` for 5; null only where nullable) and refused values are a
    :class:`ConfigError` naming the option."""
    from ..agent.memory import AgentOptions

    unknown = sorted(set(changes) - set(base))
    if unknown:
        raise ConfigError(f"unknown agent option(s): {', '.join(unknown)} (have: {', '.join(sorted(base))})")
    checked = {}
    for name, value in changes.items():
        spec = AgentOptions.spec(name)
        checked[name] = spec.check_json(json_int(value) if spec.type is int else value, AgentOptions.owner)
    AgentOptions.from_dict({**base, **checked})  # rules across options
    return checked


__all__ = ["AgentView", "Service", "Started", "keyed_run_id"]
