"""Agent Files (``.af``, Letta's portable agent format): a MemGPT agent exported and imported whole.

An export is the JSON Letta's ``AgentFileSchema`` describes (``agents, groups, blocks, files, sources, tools,
mcp_servers, metadata, created_at``; ids local to the file: ``agent-0``, ``block-0``, ``tool-0``, ``message-0``),
so Letta and the tools written for it read it: the core-memory blocks, the system prompt, pagemind's functions as
Letta core tools, and **every** message of the agent's history (Letta's own export keeps 50), the in-context ones
named in ``in_context_message_ids``. What the format has no field for is in the extension ``pagemind``, which other
readers ignore: at the top, per agent, its options, its bookkeeping state and its archival passages (text, time,
gist, source); on each message, the event it was (``kind``, ``payload``, ``time``). Importing an export of pagemind
reads the extension, so the round trip is lossless: the same blocks, options, events (kinds, payloads, times,
in-context flags, order) and passages (embeddings are computed again by the importing store's embedder).

Importing a Letta file reads its standard fields: the system prompt becomes the agent's own instructions (its
``system`` option: pagemind still appends its step format, functions and core memory), blocks keep their labels,
values and limits, and messages become events (a user message, an assistant step with its tool call and inner
thoughts, the tool's return; a reply without a tool call is a ``send_message`` step; Letta's packed heartbeats and
system alerts are those events). Files are JSON, or JSON encoded once more as a string (the published examples).

What has no counterpart is refused by name before anything is stored (:class:`Unsupported`): tools with source
code (pagemind runs only its own functions), Letta's built-in, file, multi-agent and MCP tools, multi-agent groups,
files and folders, MCP servers. ``skip_unsupported`` imports the rest and lists what was left out. What is read but
not kept is listed as notes (block descriptions, read-only flags, tool rules, the Letta model settings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError
from ..limits import (
    MAX_AGENT_FILE,
    MAX_AGENT_FILE_VALUES,
    MAX_BLOCK_VERSIONS,
    MAX_BLOCKS,
    check_block,
    check_json_shape,
    check_text,
    label_from_letta,
    label_to_letta,
)
from .core import NAME, Agent
from .functions import FUNCTIONS
from .memory import CLOCK, AgentOptions, AgentState, Block, BlockVersion, Event, Passage

EXTENSION = "pagemind"  # the extension's key, at the top, per agent (inside it) and on each message
FORMAT = 1  # the extension's version
_ALL = 2**62  # every row
# Letta's tools that pagemind's functions stand for (by name): its MemGPT core tools, and the sleep-time memory
# tools that do what core_memory_append / core_memory_replace do
COUNTERPARTS = {**{f.name: f.name for f in FUNCTIONS}, "memory_insert": "core_memory_append",
                "memory_replace": "core_memory_replace"}
_MEMORY_TOOLS = ("core_memory_append", "core_memory_replace")


class Unsupported(InputError):
    """The file uses Letta features pagemind has no counterpart for (each named in ``features``)."""

    def __init__(self, features: Sequence[str]) -> None:
        self.features = tuple(features)
        super().__init__("this agent file uses what pagemind has no counterpart for: " + "; ".join(self.features)
                         + ". Nothing was imported; import the rest with --skip-unsupported (skip_unsupported=true)")


@dataclass(frozen=True)
class AgentPlan:
    """One agent of a file, converted and checked, ready to be stored."""

    name: str
    options: AgentOptions
    blocks: tuple[Block, ...]
    events: tuple[Event, ...]
    passages: tuple[Passage, ...]
    state: AgentState = field(default_factory=AgentState)
    dropped: tuple[str, ...] = ()  # unsupported features left out (skip_unsupported)
    notes: tuple[str, ...] = ()  # what was read but not kept
    versions: tuple[BlockVersion, ...] = ()  # core memory's history (a pagemind export's), oldest first per label


# --- reading a file -----------------------------------------------------------------------------------------
def _shaped(text: str) -> str:
    """``text`` when its JSON is within the Agent File's bounds (depth, values); an :class:`InputError` before the
    parser builds its objects otherwise, whatever surface brought the file."""
    shape = check_json_shape(text.encode("utf-8"), values=MAX_AGENT_FILE_VALUES, what="the agent file", fewer="")
    if shape is not None:
        raise InputError(shape)
    return text


def read_agent_file(data: bytes | str | dict[str, Any]) -> dict[str, Any]:
    """The file's JSON object: plain JSON, or JSON encoded once more as a string (Letta's published examples)."""
    if isinstance(data, dict):
        doc: Any = data
    else:
        if isinstance(data, bytes):
            if len(data) > MAX_AGENT_FILE:
                raise InputError(f"the agent file is {len(data):,} bytes; at most {MAX_AGENT_FILE:,} are read")
            try:
                data = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise InputError("the agent file is not UTF-8 text (an .af file is JSON)") from None
        try:
            doc = json.loads(_shaped(data))
            if isinstance(doc, str):  # JSON encoded once more: its inner text is held to the same bounds
                doc = json.loads(_shaped(doc))
        except ValueError as err:
            raise InputError(f"the agent file is not JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("agents"), list) or not doc["agents"]:
        raise InputError('not an agent file: an .af file is a JSON object with a non-empty "agents" list')
    if not all(isinstance(a, dict) for a in doc["agents"]):
        raise InputError('not an agent file: each of "agents" is an object')
    return doc


# --- export -------------------------------------------------------------------------------------------------
def export_agent(agent: Agent, name: str | None = None, *, model: str | None = None) -> dict[str, Any]:
    """Agent ``agent`` as an agent file (a JSON object; ``name``: the name it carries, e.g. a service user's own
    name for it; ``model``: the model it talks to, as Letta's ``llm_config``)."""
    name = name or agent.name
    blocks = agent.blocks()
    _, events = agent.history(0, _ALL)
    _, passages = agent.passages("", 0, _ALL)
    labels = [label_to_letta(b.label) for b in blocks]
    system = agent.options.system if agent.options.system is not None else default_system()
    messages = [_message("message-0", "system", [_text(system)], iso_time(agent.now()), ext={"kind": "system"})]
    in_context = ["message-0"]
    calls: list[tuple[str, str]] = []  # the open calls: (call id, function)
    for event in events:
        mid = f"message-{len(messages)}"
        messages.append(_event_message(mid, event, calls))
        if event.in_context:
            in_context.append(mid)
    tools = letta_tools(labels)
    return {
        "agents": [{
            "id": "agent-0", "name": name, "agent_type": "memgpt_agent", "system": system, "description": None,
            "metadata": {}, "tags": [], "memory_blocks": [], "tools": [], "tool_rules": [],
            "tool_ids": [t["id"] for t in tools], "block_ids": [f"block-{i}" for i in range(len(blocks))],
            "source_ids": [], "folder_ids": None, "include_base_tools": False, "initial_message_sequence": None,
            "llm_config": {"model": model, "handle": model, "context_window": agent.options.context_window}
            if model else None,
            "embedding_config": None, "message_buffer_autoclear": False, "enable_sleeptime": False,
            "in_context_message_ids": in_context, "messages": messages, "files_agents": [], "group_ids": [],
        }],
        "groups": [],
        "blocks": [{"id": f"block-{i}", "label": label_to_letta(b.label), "value": b.value, "limit": b.limit,
                    "description": b.description or None, "read_only": False, "metadata": {},
                    "preserve_on_migration": False, "hidden": None}
                   for i, b in enumerate(blocks)],
        "files": [], "sources": [], "tools": tools, "mcp_servers": [],
        "metadata": {"revision_id": None, "exported_by": "pagemind"},
        "created_at": iso_time(agent.now()),
        EXTENSION: {"format": FORMAT, "agents": {"agent-0": {
            "name": name, "options": agent.options.as_dict(), "state": dict(agent.state.__dict__),
            "passages": [{"text": p.text, "time": p.time, "summary": p.summary, "source": p.source}
                         for p in passages],
            "block_versions": [{"label": v.block.label, "version": v.version, "value": v.block.value,
                                "limit": v.block.limit, "description": v.block.description, "cause": v.cause,
                                "time": v.time} for v in sorted(agent.block_history(limit=MAX_BLOCK_VERSIONS),
                                                               key=lambda v: (v.block.label, v.version))]}}},
    }


def default_system() -> str:
    """pagemind's MemGPT instructions as the file's ``system`` (core memory is in the blocks)."""
    from .context import prompt

    return prompt("system", functions=prompt("functions", functions=FUNCTIONS),
                  reply_format=prompt("reply_format_json"), core_memory="(the blocks)").strip()


def letta_tools(labels: list[str]) -> list[dict[str, Any]]:
    """pagemind's functions as Letta core tools (no source code: they are built in), as a file and Letta's API show
    them."""
    from .actions import step_tools

    out = []
    for i, tool in enumerate(step_tools(labels or ["persona"])):
        params = dict(tool.parameters)
        props = {k: v for k, v in params["properties"].items() if k != "inner_thoughts"}
        schema = {"name": tool.name, "description": tool.description,
                  "parameters": {**params, "properties": props, "required": [r for r in params["required"]
                                                                             if r != "inner_thoughts"]}}
        kind = "letta_memory_core" if tool.name in _MEMORY_TOOLS else "letta_core"
        out.append({"id": f"tool-{i}", "name": tool.name, "description": tool.description, "tool_type": kind,
                    "source_type": "python", "source_code": None, "tags": [kind], "json_schema": schema})
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _message(mid: str, role: str, content: list[dict[str, Any]], created: str, *, ext: dict[str, Any],
             **more: Any) -> dict[str, Any]:
    return {"type": "message", "id": mid, "role": role, "content": content, "name": None, "agent_id": "agent-0",
            "tool_calls": None, "tool_call_id": None, "tool_returns": [], "created_at": created, **more,
            EXTENSION: ext}


def _event_message(mid: str, event: Event, calls: list[tuple[str, str]]) -> dict[str, Any]:
    """One event as a Letta message, with the event itself in the extension."""
    p, created = event.payload, iso_time(event.time)
    ext = {"kind": event.kind, "payload": p, "time": event.time}
    if event.kind == "user_message":
        return _message(mid, "user", [_text(p["message"])], created, ext=ext)
    if event.kind == "step":
        if not p.get("function"):  # an invalid reply: its raw text
            return _message(mid, "assistant", [_text(str(p.get("raw", "")))], created, ext=ext)
        call_id = f"call-{event.seq}"
        calls.append((call_id, p["function"]))
        call = {"id": call_id, "type": "function",
                "function": {"name": p["function"], "arguments": json.dumps(p.get("arguments", {}),
                                                                            ensure_ascii=False)}}
        thoughts = [_text(p["thoughts"])] if p.get("thoughts") else []
        return _message(mid, "assistant", thoughts, created, ext=ext, tool_calls=[call])
    if event.kind == "function_result":
        answered = next((c for c, f in reversed(calls) if f == p.get("function")), calls[-1][0] if calls else None)
        calls[:] = [c for c in calls if c[0] != answered]
        text = json.dumps({"status": p.get("status"), "message": p.get("message"), "time": event.time},
                          ensure_ascii=False)
        status = "success" if p.get("status") == "OK" else "error"
        return _message(mid, "tool", [_text(text)], created, ext=ext, name=p.get("function"),
                        tool_call_id=answered,
                        tool_returns=[{"tool_call_id": answered, "status": status, "func_response": text,
                                       "stdout": None, "stderr": None}])
    # heartbeats, system alerts and summaries: Letta packs them as user messages of JSON, as MemGPT did
    return _message(mid, "user", [_text(event.render())], created, ext=ext)


def iso_time(agent_time: str) -> str:
    """The agent clock's ``YYYY-MM-DD HH:MM:SS`` as ISO 8601 (what Letta's dates are)."""
    return agent_time.replace(" ", "T")


# --- import -------------------------------------------------------------------------------------------------
def plan_import(data: bytes | str | dict[str, Any], *, name: str | None = None, skip_unsupported: bool = False,
                now: str | None = None) -> list[AgentPlan]:
    """The agents of an agent file, converted and checked (nothing stored): :class:`Unsupported` names every
    feature without a counterpart unless ``skip_unsupported``; ``name`` renames the file's only agent."""
    doc = read_agent_file(data)
    now = now or datetime.now().strftime(CLOCK)
    agents = doc["agents"]
    if name is not None and len(agents) > 1:
        raise InputError(f"the file holds {len(agents)} agents; a new name is for a file of one")
    shared = _file_features(doc)
    tools_by_id = {t.get("id"): t for t in _objects(doc.get("tools"))}
    blocks_by_id = {b.get("id"): b for b in _objects(doc.get("blocks"))}
    found = doc.get(EXTENSION)
    ext: dict[str, Any] = found if isinstance(found, dict) else {}
    plans, unsupported = [], list(shared)
    for n, agent in enumerate(agents):
        mine = (ext.get("agents") or {}).get(agent.get("id")) if isinstance(ext.get("agents"), dict) else None
        try:
            features = _agent_features(agent, tools_by_id)
            unsupported += features
            plans.append(_plan(agent, mine if isinstance(mine, dict) else None, blocks_by_id, name, now,
                               tuple(shared + features)))
        except (KeyError, TypeError, AttributeError, ValueError, IndexError, OverflowError) as err:
            # a field of the wrong type or shape somewhere in untrusted JSON: the file's fault, said as such
            where = f"agent {n} ({_name_of(agent.get('name'))})"
            raise InputError(f"not a valid agent file: {where} has a field of the wrong shape "
                             f"({type(err).__name__}: {str(err)[:200]})") from None
    if unsupported and not skip_unsupported:
        raise Unsupported(list(dict.fromkeys(unsupported)))
    return plans


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _file_features(doc: dict[str, Any]) -> list[str]:
    out = []
    if groups := _objects(doc.get("groups")):
        kinds = sorted({str(g.get("manager_type", "group")) for g in groups})
        out.append(f"multi-agent groups ({len(groups)}: {', '.join(kinds)})")
    files = _objects(doc.get("files")) + _objects(doc.get("sources"))
    if files:
        out.append(f"files and folders ({len(files)}; pagemind agents read documents with `agent load`)")
    if servers := _objects(doc.get("mcp_servers")):
        out.append("MCP servers (" + ", ".join(repr(s.get("server_name") or s.get("name") or "?")
                                               for s in servers) + ")")
    return out


def _agent_features(agent: dict[str, Any], tools_by_id: dict[Any, dict[str, Any]]) -> list[str]:
    tools = [tools_by_id[i] for i in agent.get("tool_ids") or [] if i in tools_by_id] + _objects(agent.get("tools"))
    out = []
    for tool in tools:
        tool_name = str(tool.get("name") or tool.get("id") or "?")
        if tool_name in COUNTERPARTS:
            continue
        if tool.get("source_code"):
            out.append(f"tool {tool_name!r} (its source code would run; pagemind runs only its own functions)")
        else:
            out.append(f"tool {tool_name!r} ({tool.get('tool_type') or 'a Letta tool'}, no pagemind counterpart)")
    return out


def _plan(agent: dict[str, Any], mine: dict[str, Any] | None, blocks_by_id: dict[Any, dict[str, Any]],
          name: str | None, now: str, dropped: tuple[str, ...]) -> AgentPlan:
    notes: list[str] = []
    name = name or (mine or {}).get("name") or _name_of(agent.get("name"))
    if not NAME.match(name):
        raise InputError(f"agent name {name!r}: use letters, digits, '_', '.', '-' (at most 64); give another name")
    if mine is not None:
        options = AgentOptions.stored(_mapping(mine.get("options"), "options"))
        state = _state(_mapping(mine.get("state"), "state"))
    else:
        system = agent.get("system")
        if isinstance(system, str):
            check_text("system", system, "the agent's system prompt")
        options = AgentOptions.create(system=system if isinstance(system, str) and system.strip() else None)
        state = AgentState()
        if agent.get("llm_config") or agent.get("model"):
            notes.append("the Letta model settings (llm_config): the agent talks to the model pagemind serves")
    raw_blocks = [blocks_by_id[i] for i in agent.get("block_ids") or [] if i in blocks_by_id]
    raw_blocks += _objects(agent.get("memory_blocks"))
    if len(raw_blocks) > MAX_BLOCKS:
        raise InputError(f"the agent file gives {len(raw_blocks)} blocks; an agent has at most {MAX_BLOCKS}")
    blocks = tuple(_block(b, options, notes) for b in raw_blocks)
    if len({b.label for b in blocks}) < len(blocks):
        raise InputError("the agent file gives a block label twice")
    if mine is not None and all(EXTENSION in m for m in _objects(agent.get("messages"))):
        in_context = set(agent.get("in_context_message_ids") or [])
        events = tuple(_stored_event(m[EXTENSION], m.get("id") in in_context)
                       for m in _objects(agent.get("messages")) if _kind_of(m[EXTENSION]) != "system")
        passages = tuple(Passage(0, check_text("passage", str(p["text"]), "an archival passage"),
                                 _clock(p.get("time"), now), _optional_text(p.get("summary")),
                                 _optional_text(p.get("source")))
                         for p in _objects(mine.get("passages")) if p.get("text"))
        versions = _versions(mine.get("block_versions"), blocks)
    else:
        events = tuple(_letta_events(agent, now, notes))
        passages = ()
        versions = ()
    if agent.get("tool_rules"):
        notes.append("tool rules (pagemind's step protocol decides which function may follow which)")
    return AgentPlan(name, options, blocks, events, passages, state, dropped, tuple(dict.fromkeys(notes)), versions)


# what a stored event's payload holds, by kind: each field's type (an export writes exactly these)
PAYLOADS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "user_message": {"message": str},
    "step": {"thoughts": str, "function": (str, type(None)), "arguments": dict},
    "function_result": {"function": str, "status": str, "message": str},
    "heartbeat": {"reason": str},
    "system_alert": {"message": str},
    "summary": {"message": str},
}
_CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def _kind_of(stored: Any) -> Any:
    return stored.get("kind") if isinstance(stored, dict) else None


def _stored_event(stored: Any, live: bool) -> Event:
    """An event of a pagemind export, typed: a known kind, a payload with that kind's fields of their types (a step
    that failed to parse keeps its ``raw`` text instead), and a time of the agent clock; an :class:`InputError`
    naming what is wrong otherwise."""
    kind = _kind_of(stored)
    if kind not in PAYLOADS:
        raise InputError(f"not a valid agent file: an event of kind {str(kind)[:40]!r} (have: {', '.join(PAYLOADS)})")
    payload, time = stored.get("payload"), stored.get("time")
    if not isinstance(payload, dict):
        raise InputError(f"not a valid agent file: a {kind} event's payload is {type(payload).__name__}, not an "
                         "object")
    wanted = {"raw": str} if kind == "step" and "raw" in payload else PAYLOADS[kind]
    for name, types in wanted.items():
        if not isinstance(payload.get(name), types):
            raise InputError(f"not a valid agent file: a {kind} event's {name} is "
                             f"{type(payload.get(name)).__name__}")
        if isinstance(payload[name], str):
            check_text("message", payload[name], f"a {kind} event's {name}")
    if not isinstance(time, str) or not _CLOCK.match(time):
        raise InputError(f"not a valid agent file: a {kind} event's time {str(time)[:40]!r} is not "
                         "YYYY-MM-DD HH:MM:SS")
    return Event(kind, dict(payload), time, in_context=live)


def _clock(value: Any, default: str) -> str:
    """A passage's time: the agent clock's form, else (absent) ``default``; an :class:`InputError` for another."""
    if value is None or value == "":
        return default
    if not isinstance(value, str) or not _CLOCK.match(value):
        raise InputError(f"not a valid agent file: a passage's time {str(value)[:40]!r} is not YYYY-MM-DD HH:MM:SS")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else check_text("name", str(value), "a passage's summary or source")


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"not a valid agent file: pagemind's {what} is {type(value).__name__}, not an object")
    return value


def _state(data: dict[str, Any]) -> AgentState:
    """The agent's bookkeeping from an export: its counters whole numbers, ``warned`` true or false."""
    state = AgentState.from_dict(data)
    counts = (state.evictions, state.evicted_messages, state.valid_actions, state.invalid_actions)
    if not isinstance(state.warned, bool) or not isinstance(state.extra, dict) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 53 for n in counts):
        raise InputError("not a valid agent file: pagemind's state holds a field of the wrong type")
    return state


def _versions(raw: Any, blocks: tuple[Block, ...]) -> tuple[BlockVersion, ...]:
    """A pagemind export's core-memory history, checked: each version by the one block rule, numbered upwards per
    label in the file's order, at most :data:`MAX_BLOCK_VERSIONS` in all, for labels the file's blocks have."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("block_versions must be a list")
    if len(raw) > MAX_BLOCK_VERSIONS:
        raise InputError(f"the agent file holds {len(raw):,} block versions; at most {MAX_BLOCK_VERSIONS:,} are "
                         "imported (export it again from a pagemind that keeps fewer, or leave block_versions out)")
    labels, out = {b.label for b in blocks}, []
    numbers: dict[str, int] = {}
    for item in raw:
        if not isinstance(item, dict):
            raise InputError("a block version must be an object")
        label, version = str(item.get("label") or ""), item.get("version")  # pagemind's label, as it stores it
        limit, when = item.get("limit"), item.get("time")
        if label not in labels:
            raise InputError(f"block_versions names block {label!r}, which the file's blocks do not have")
        if not isinstance(version, int) or isinstance(version, bool) or not numbers.get(label, 0) < version <= \
                MAX_BLOCK_VERSIONS:
            raise InputError(f"block {label}: versions must be numbered upwards from 1 (got {version!r})")
        if not isinstance(limit, int) or isinstance(limit, bool) or not isinstance(when, (int, float)):
            raise InputError(f"block {label} version {version}: limit and time must be numbers")
        block = Block(label, str(item.get("value") or ""), limit, str(item.get("description") or ""))
        check_block(block.label, block.value, block.limit, block.description)
        numbers[label] = version
        out.append(BlockVersion(block, version, check_text("name", str(item.get("cause") or "import"), "a cause"),
                                float(when)))
    return tuple(out)


def _name_of(value: Any) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(value or "agent")).strip("-._") or "agent"
    return name[:64]


def _block(raw: dict[str, Any], options: AgentOptions, notes: list[str]) -> Block:
    label, value = label_from_letta(str(raw.get("label") or "")), raw.get("value")
    value = "" if value is None else str(value)
    limit = raw.get("limit")
    limit = int(limit) if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else options.block_limit
    limit = max(limit, len(value))  # a value longer than its limit keeps it all (still within the one block rule)
    description = "" if raw.get("description") is None else str(raw["description"])
    check_block(label, value, limit, description)
    if raw.get("read_only"):
        notes.append(f"read-only flag of block {label!r} (the agent may edit it here)")
    return Block(label, value, limit, description)


def _letta_events(agent: dict[str, Any], now: str, notes: list[str]) -> Iterable[Event]:
    """A Letta agent's messages as pagemind events (the first system message is the compiled prompt: left out)."""
    in_context = set(agent.get("in_context_message_ids") or [])
    calls: dict[str, str] = {}  # tool call id -> function
    pending: str | None = None  # a send_message call without its result yet
    for i, m in enumerate(_objects(agent.get("messages"))):
        role, when, live = m.get("role"), agent_time(m.get("created_at"), now), m.get("id") in in_context
        text, reasoning = _content(m.get("content"))
        check_text("message", text, f"message {i}")  # as long as a message sent to the agent may be, at most
        if role == "system":
            if i > 0 and text:
                yield Event("system_alert", {"message": text}, when, in_context=live)
            continue
        if role == "user":
            yield _user_event(text, when, live)
        elif role == "assistant":
            tool_calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
            if len(tool_calls) > 1:
                notes.append("parallel tool calls (a pagemind step makes one call: the first is kept)")
            if tool_calls:
                fn = tool_calls[0].get("function") or {}
                args = _arguments(fn.get("arguments"))
                thoughts = str(args.pop("inner_thoughts", "") or reasoning or text)
                function = str(fn.get("name") or "?")
                calls[str(tool_calls[0].get("id"))] = function
                pending = function
                yield Event("step", {"thoughts": thoughts, "function": function, "arguments": args}, when,
                            in_context=live)
            else:  # a reply without a tool call (Letta v1 agents): a send_message step and its result
                yield Event("step", {"thoughts": reasoning, "function": "send_message",
                                     "arguments": {"message": text}}, when, in_context=live)
                yield _sent(when, live)
                pending = None
        elif role == "tool":
            function = calls.get(str(m.get("tool_call_id")), pending or "?")
            returns = [r for r in m.get("tool_returns") or [] if isinstance(r, dict)]
            failed = bool(returns) and returns[0].get("status") == "error"
            yield Event("function_result", {"function": function, "status": "Failed" if failed else "OK",
                                            "message": _returned(text)}, when, in_context=live)
            pending = None
        else:
            notes.append(f"messages of role {role!r}")
    if pending == "send_message":  # the file ends inside a send_message step: its result, as the turn stored it
        yield _sent(now, True)


def _sent(when: str, live: bool) -> Event:
    return Event("function_result", {"function": "send_message", "status": "OK",
                                     "message": "Sent message successfully."}, when, in_context=live)


def _user_event(text: str, when: str, live: bool) -> Event:
    """A user message, or a heartbeat / system alert Letta packed as a user message of JSON."""
    try:
        packed = json.loads(text) if text.lstrip().startswith("{") else None
    except ValueError:
        packed = None
    kind = packed.get("type") if isinstance(packed, dict) else None
    if kind == "heartbeat":
        return Event("heartbeat", {"reason": str(packed.get("reason", ""))}, when, in_context=live)  # type: ignore[union-attr]
    if kind in ("system_alert", "login"):
        return Event("system_alert", {"message": str(packed.get("message", ""))}, when, in_context=live)  # type: ignore[union-attr]
    if kind == "user_message":
        return Event("user_message", {"message": str(packed.get("message", ""))}, when, in_context=live)  # type: ignore[union-attr]
    return Event("user_message", {"message": text}, when, in_context=live)


def _content(content: Any) -> tuple[str, str]:
    """(text, reasoning) of a Letta message's content: a string, or a list of parts."""
    if isinstance(content, str):
        return content, ""
    texts, thoughts = [], []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            texts.append(str(part.get("text") or ""))
        elif part.get("type") == "reasoning":
            thoughts.append(str(part.get("reasoning") or ""))
    return "\n".join(texts), "\n".join(thoughts)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return dict(raw)
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {"raw": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def _returned(text: str) -> str:
    """A tool return's message: the ``message`` of Letta's ``{"status", "message", "time"}`` packing, or the text."""
    try:
        packed = json.loads(text) if text.lstrip().startswith("{") else None
    except ValueError:
        return text
    if isinstance(packed, dict) and "message" in packed:
        return str(packed["message"])
    return text


def agent_time(value: Any, default: str) -> str:
    """An ISO time as the agent clock writes it (``YYYY-MM-DD HH:MM:SS``, in UTC when the time has a zone)."""
    if not isinstance(value, str) or not value:
        return default
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return default
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.strftime(CLOCK)


__all__ = ["AgentPlan", "Unsupported", "agent_time", "default_system", "export_agent", "iso_time", "letta_tools",
           "plan_import", "read_agent_file"]
