"""Conversations written elsewhere, read into an agent's recall: a history becomes memory without a turn per message.

A file is one of:
- a JSON list (or JSON Lines) of messages, OpenAI's shape and kin: ``role`` (``user``/``assistant``),
  ``content`` or ``text``, and optionally ``time`` (``date``, ``created_at``: ISO 8601), ``speaker`` (``name``) and
  ``where`` (the message's place: "session 2, turn 7", which its citations name);
- Letta's message list (``message_type`` ``user_message``/``assistant_message``, ``content``, ``date``), as
  ``GET /v1/agents/{id}/messages`` returns it;
- (read by the CLI, through the evaluation's reader) a LoCoMo conversation.

A message with a ``speaker`` was said by a person the agent only listened to (two friends talking): it is kept as a
message told to the agent, found and cited as that speaker's, never as the agent's own reply. ``assistant`` messages
without a speaker are the agent's own past replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..limits import MAX_IMPORTED_MESSAGES, check_text
from .agentfile import agent_time

ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "user_message": "user",
         "assistant_message": "assistant"}  # Letta's message types among them


@dataclass(frozen=True)
class Said:
    """One message of a conversation to import: ``role`` user (told to the agent) or assistant (its own reply);
    ``time`` in the agent clock's format (``""``: now); ``where`` its place; ``speaker`` who said it."""

    role: str
    text: str
    time: str = ""
    where: str = ""
    speaker: str = ""

    def as_tuple(self) -> tuple[str, str, str, str, str]:
        return self.role, self.text, self.time, self.where, self.speaker


def read_conversation(data: bytes | str, now: str) -> list[Said]:
    """The messages of a conversation file (JSON or JSON Lines; see the module), ``now`` for those without a time;
    an :class:`InputError` naming the first message that is not one."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        rows: Any = json.loads(text)
    except ValueError:
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as err:
            raise InputError(f"not JSON or JSON Lines: {err}") from None
    if isinstance(rows, dict):
        rows = rows.get("messages", rows.get("items"))
    if not isinstance(rows, list):
        raise InputError("a conversation is a JSON list of messages (or an object with \"messages\")")
    return messages(rows, now)


def messages(rows: Iterable[Any], now: str) -> list[Said]:
    out: list[Said] = []
    for n, row in enumerate(rows, 1):
        if len(out) >= MAX_IMPORTED_MESSAGES:
            raise InputError(f"more than {MAX_IMPORTED_MESSAGES:,} messages: import the conversation in parts")
        if not isinstance(row, dict):
            raise InputError(f"message {n}: an object with role and content, not {type(row).__name__}")
        kind = row.get("message_type") or row.get("role")
        if kind in ("system", "developer", "tool") or (row.get("message_type") and kind not in ROLES):
            continue  # instructions, tool traffic and Letta's other messages (reasoning, calls) are not what was said
        role = ROLES.get(str(kind))
        if role is None:
            raise InputError(f"message {n}: role {kind!r} is not user or assistant")
        content = row.get("content", row.get("text"))
        if isinstance(content, list):  # content parts: their text
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise InputError(f"message {n}: content must be text")
        if not content.strip():
            continue
        check_text("message", content, f"message {n}")
        speaker = row.get("speaker", row.get("name")) or ""
        where = row.get("where") or ""
        if not isinstance(speaker, str) or not isinstance(where, str):
            raise InputError(f"message {n}: speaker and where must be text")
        when = agent_time(row.get("time") or row.get("date") or row.get("created_at"), now)
        out.append(Said(role, content, when, check_text("name", where, f"message {n}'s where") if where else "",
                        check_text("name", speaker, f"message {n}'s speaker") if speaker else ""))
    return out
