"""The service's common ground: the session it serves, the joined requests, the tenancy checks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError, NotFound
from ..views import Started
from ..workers import Workers

if TYPE_CHECKING:
    from ...api import Pagemind
    from ...store import (
        AgentRow,
        RunRow,
        UserRow,
    )


Progress = Callable[[str, int, int, str], None]


class ServiceBase:
    """What every concern of the service shares: one :class:`~pagemind.Pagemind` (one LLM, one store), the
    workers, the auth mode and the limits; the requests joined while they run; the tenancy checks (a user's own
    run or agent, what a request reads)."""

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
        self.tried: dict[int, int] = {}  # agent id -> its newest event's seq when this process last consolidated it

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

    def user_for(self, authorization: str | None) -> UserRow | None:
        """The user of an ``Authorization: Bearer KEY`` header value (the local user without keys); None when the
        key is missing or wrong."""
        if self.local is not None:
            return self.local
        scheme, _, key = (authorization or "").strip().partition(" ")
        return self.pm.users.authenticate(key.strip()) if scheme.lower() == "bearer" else None

    @property
    def model(self) -> str:
        """The model the service runs, by its identity (``openai:NAME``, ``gguf:NAME:DIGEST``): what users see,
        never the server's URL or credentials."""
        return str(self.pm.llm.model_identity)

    def find_run(self, user: UserRow, run_id: str) -> RunRow | None:
        """One of the user's runs, or None."""
        return self.pm.runs.get(run_id, user.id)

    def own_run(self, user: UserRow, run_id: str) -> RunRow:
        run = self.find_run(user, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r}")
        return run

    def cancel(self, user: UserRow, run_id: str) -> RunRow:
        """Ask one of the user's runs to stop (at its next step, or mid-answer); the run as it is now."""
        self.own_run(user, run_id)
        self.pm.runs.cancel(run_id)
        return self.own_run(user, run_id)

    def own_agent(self, user: UserRow, ref: int | str) -> AgentRow:
        """The user's agent row by id (HTTP) or by its own name (MCP); :class:`NotFound` for another user's."""
        return self.pm.user_agent(ref, user.id)

    def source(self, user: UserRow, doc_id: str | None = None, library: str | None = None) -> Any:
        """What a request reads: one of the user's documents, or one of their libraries."""
        if library is not None:
            return self.pm.library(library, user_id=user.id)
        assert doc_id is not None
        return self.pm.open_document(doc_id, user_id=user.id)

    @staticmethod
    def check_method(method: str, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` of ``method`` checked against its declaration: an unknown method, an option it does not
        take (naming the methods that do) or a refused value is a :class:`ConfigError` before any run exists."""
        from ...methods import registry
        from ...methods.base import Chooser

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
        given = {k: whole_number(v) if specs[k].type is int else v for k, v in options.items() if v is not None}
        for declaration in declarations:  # each value checked by every declaration that takes it
            declaration.create(**{k: v for k, v in given.items() if k in {s.name for s in declaration.specs()}})
        return given


def default_max_body(max_bytes: int) -> int:
    """The JSON body limit when none is set: a document text of ``max_bytes`` written with JSON escapes, plus
    room for the other fields."""
    return 2 * max_bytes + (1 << 20)


def whole_number(value: Any) -> Any:
    """A JSON number without a fraction (``204.0``) as the integer it is, for an integer setting (JSON Schema
    counts it as one; Python's int checks do not)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value
