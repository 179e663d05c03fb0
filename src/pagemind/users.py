"""Users of ``pagemind serve``: API keys (shown once, stored as SHA-256 hashes), per-user export and erase.

The tenant of every request is the user whose key it carries, never a name or id the client sends. A key is
``pm_`` + 32 random bytes in URL-safe base64: unguessable, so a fast hash is the right one (no password
stretching is needed for random keys).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Any

from .errors import ConfigError
from .store import LOCAL_USER, SQLStore, UserRow, memory_scope

NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    return "pm_" + secrets.token_urlsafe(32)


def create_user(store: SQLStore, name: str) -> tuple[UserRow, str]:
    """A new user and their first API key (returned once; only its hash is stored)."""
    if not NAME.match(name):
        raise ConfigError(f"user name {name!r}: use letters, digits, '_', '.', '@', '-' (at most 64)")
    key = new_key()
    user_id = store.create_user(name, hash_key(key), time.time())
    if user_id is None:
        raise ConfigError(f"a user named {name!r} already exists (`pagemind users key {name}` gives them a new key)")
    user = store.get_user(name)
    assert user is not None and user.id == user_id
    return user, key


def add_key(store: SQLStore, name: str) -> str:
    """One more API key for an existing user."""
    user = require_user(store, name)
    key = new_key()
    store.add_user_key(user.id, hash_key(key), time.time())
    return key


def authenticate(store: SQLStore, key: str | None) -> UserRow | None:
    """The user a key belongs to, or None (no key, a wrong key)."""
    if not key:
        return None
    return store.user_for_key(hash_key(key))


LOCAL = LOCAL_USER


def local_user(store: SQLStore) -> UserRow:
    """The user named ``local``, created on demand with a key nobody is shown: who acts over ``pagemind mcp``
    (stdio) and on a server that runs without keys."""
    user = store.get_user(LOCAL)
    if user is None:
        store.create_user(LOCAL, hash_key(new_key()), time.time())  # None when another process made it first
        user = store.get_user(LOCAL)
    assert user is not None
    return user


def require_user(store: SQLStore, name: str) -> UserRow:
    user = store.get_user(name)
    if user is None:
        raise ConfigError(f"no user named {name!r} (`pagemind users list` shows them)")
    return user


def holdings(store: SQLStore, user_id: int) -> dict[str, int]:
    """How many documents, agents and runs a user has."""
    return {"documents": store.count_user_documents(user_id), "agents": len(store.user_agents(user_id)),
            "runs": store.count_runs(user_id)}


def export_user(store: SQLStore, user_id: int) -> dict[str, Any]:
    """Everything of one user as one JSON-able archive: documents with their texts and the memories the user's own
    requests made of them (with their items), agents with their core memory, history and archival passages, and runs
    with their steps."""
    scope = memory_scope(store, user_id)
    documents = [{**d.__dict__, "text": store.document_text(d.id),
                  "memories": [{**m.__dict__, "items": store.memory_items(m.key)}
                               for m in store.memories_for(d.id, scope=scope)]}
                 for d in store.user_documents(user_id)]
    agents = []
    for a in store.user_agents(user_id):
        total = store.count_agent_events(a.id)
        events = store.recent_agent_events(a.id, total) if total else []
        _, passages = store.search_agent_passages(a.id, "", 0, None)
        agents.append({"id": a.id, "name": a.name, "settings": a.settings, "created": a.created,
                       "blocks": [b.__dict__ for b in store.agent_blocks(a.id)],
                       "messages": [{k: v for k, v in e.__dict__.items()} for e in events],
                       "passages": [{k: v for k, v in p.__dict__.items() if k != "embedding"} for p in passages]})
    runs = []
    offset = 0
    while True:
        page = store.list_runs(user_id, limit=500, offset=offset)
        for r in page:
            runs.append({**r.__dict__, "steps": [s.__dict__ for s in store.run_steps(r.id)]})
        if len(page) < 500:
            break
        offset += 500
    return {"format": "pagemind-user-export/1", "exported": time.time(), "documents": documents, "agents": agents,
            "runs": runs}


def erase_user(store: SQLStore, user_id: int) -> dict[str, int]:
    """Delete everything of one user and nothing else (their account and keys stay): their memories go, also those
    of a text another user still holds, and no other user's memory of the same text goes."""
    return store.erase_user_data(user_id)


class Users:
    """The users of one store, the functions above bound to it (``Pagemind.users``): what the server, MCP and the
    ``pagemind users`` commands ask about users."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store

    def create(self, name: str) -> tuple[UserRow, str]:
        """A new user and their first API key (shown once)."""
        return create_user(self._store, name)

    def add_key(self, name: str) -> str:
        return add_key(self._store, name)

    def authenticate(self, key: str | None) -> UserRow | None:
        """The user a key belongs to, or None."""
        return authenticate(self._store, key)

    def local(self) -> UserRow:
        """The user named ``local`` (created on demand): who acts without keys."""
        return local_user(self._store)

    def get(self, name: str) -> UserRow:
        """The user named ``name``; :class:`ConfigError` when there is none."""
        return require_user(self._store, name)

    def all(self) -> list[UserRow]:
        return self._store.list_users()

    def any_but_local(self) -> bool:
        """Whether any user other than the implicit ``local`` one exists (``serve --auth auto`` then wants keys)."""
        return any(u.name != LOCAL for u in self._store.list_users())

    def holdings(self, user_id: int) -> dict[str, int]:
        return holdings(self._store, user_id)

    def export(self, user_id: int) -> dict[str, Any]:
        return export_user(self._store, user_id)

    def erase(self, user_id: int) -> dict[str, int]:
        return erase_user(self._store, user_id)


def agent_key(user_id: int, name: str) -> str:
    """The stored name of a user's agent: agent names are global in the store, so the service (HTTP and MCP)
    keeps each user's agents as ``u<user id>.<name>`` and shows them by their own name; ``name`` held to the one
    rule of every surface (:func:`pagemind.limits.check_agent_name`, an :class:`InputError`)."""
    from .limits import check_agent_name

    return f"u{user_id}.{check_agent_name(name)}"


def agent_name(user_id: int, stored: str) -> str:
    """A user's agent's own name, from its stored name."""
    prefix = f"u{user_id}."
    return stored[len(prefix):] if stored.startswith(prefix) else stored
