"""One step's reply: ``{"thoughts": ..., "function": ..., "arguments": {...}}``.

Three forms of the same contract: a GBNF grammar (llama.cpp; exact layout, bounded strings, block labels
and page numbers as alternatives), a JSON schema (``oneOf`` per function, for servers that take
``response_format``), and a tolerant parser with validation for replies that were not constrained
(first JSON object of the reply, code fences ignored, common key aliases accepted).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.base import LLMResponse, Tool
from .functions import FUNCTIONS, SPECS, FunctionSpec, Param

THOUGHTS_CHARS = 250
_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
_FENCE = re.compile(r"```(?:json)?", re.IGNORECASE)
_THOUGHTS = ("thoughts", "inner_thoughts", "thinking", "thought", "inner_monologue")
_FUNCTION = ("function", "name", "tool", "action")
_ARGUMENTS = ("arguments", "params", "parameters", "args", "input")


class InvalidAction(Exception):
    """A reply that is not a valid call; the message goes back to the processor."""


@dataclass(frozen=True)
class Action:
    thoughts: str
    function: str
    arguments: dict[str, Any]  # validated, without request_heartbeat
    heartbeat: bool

    def payload(self) -> dict[str, Any]:
        """As stored and shown back to the processor (request_heartbeat included for chained calls)."""
        args = dict(self.arguments)
        if not SPECS[self.function].terminal:
            args["request_heartbeat"] = self.heartbeat
        return {"thoughts": self.thoughts, "function": self.function, "arguments": args}


# --- grammar and schema ----------------------------------------------------------------------------
def _rule(name: str) -> str:
    return name.replace("_", "-")


def thoughts_bound(labels: Sequence[str], max_chars: int | None) -> int:
    """One bound for the thoughts (they come before the function name): up to a quarter of the reply."""
    return THOUGHTS_CHARS if max_chars is None else min(THOUGHTS_CHARS, max(16, max_chars // 4))


def bounds(spec: FunctionSpec, labels: Sequence[str], max_chars: int | None) -> dict[str, int]:
    """Length bounds of the thoughts and string arguments of ``spec``, scaled down so that the longest reply
    the grammar allows has at most ``max_chars`` characters. A token is at least one character, so with
    ``max_tokens >= max_chars`` a constrained reply always ends before it is cut off."""
    thoughts = thoughts_bound(labels, max_chars)
    return {"thoughts": thoughts, **_scaled(spec, labels, None if max_chars is None else max_chars - thoughts)}


def _scaled(spec: FunctionSpec, labels: Sequence[str], max_chars: int | None) -> dict[str, int]:
    wanted = {p.name: p.max_length for p in spec.all_params if p.kind == "string"}
    fixed = len('{"thoughts": "", "function": "", "arguments": {}}') + len(spec.name)
    for p in spec.all_params:
        fixed += len(p.name) + 6 + {"string": 2, "integer": 2, "boolean": 5, "date": 12,
                                   "label": 2 + max((len(x) for x in labels), default=0)}[p.kind]
    room = (max_chars or 1 << 30) - fixed
    scale = min(1.0, room / max(1, sum(wanted.values())))
    return {k: max(8, int(v * scale)) for k, v in wanted.items()}


def _value_rule(p: Param, labels: Sequence[str], limit: int) -> tuple[str, str]:
    """(rule name, rule definition) for one parameter."""
    if p.kind == "string":
        name = f"str-{p.min_length}-{limit}"
        return name, f'{name} ::= "\\"" char{{{p.min_length},{limit}}} "\\""'
    if p.kind == "integer":
        return "int", 'int ::= [0-9] | [1-9] [0-9]'
    if p.kind == "boolean":
        return "bool", 'bool ::= "true" | "false"'
    if p.kind == "date":
        return "date", 'date ::= "\\"" [12] [0-9] [0-9] [0-9] "-" [01] [0-9] "-" [0-3] [0-9] "\\""'
    alternatives = " | ".join(f'"\\"{label}\\""' for label in labels)
    return "label", f"label ::= {alternatives}"


def step_grammar(labels: Sequence[str], max_chars: int | None = None,
                 functions: Sequence[FunctionSpec] = FUNCTIONS) -> str:
    """The GBNF grammar of one step; ``labels`` are the agent's core-memory block labels, ``functions`` the
    ones the step may call (all of them, or only send_message on a turn's last step)."""
    rules: dict[str, str] = {"char": _CHAR}
    calls = []
    for spec in functions:
        limits = bounds(spec, labels, max_chars)
        parts = []
        for p in spec.all_params:
            name, definition = _value_rule(p, labels, limits.get(p.name, 0))
            rules[name] = definition
            parts.append(f'"\\"{p.name}\\": " {name}')
        rule, body = f"call-{_rule(spec.name)}", ' ", " '.join(parts)
        rules[rule] = f'{rule} ::= "\\"{spec.name}\\", \\"arguments\\": {{" {body} "}}"'
        calls.append(rule)
    thoughts = thoughts_bound(labels, max_chars)
    head = f'root ::= "{{\\"thoughts\\": \\"" char{{1,{thoughts}}} "\\", \\"function\\": " call "}}"'
    return "\n".join([head, f"call ::= {' | '.join(calls)}", *rules.values()]) + "\n"


def _param_schema(p: Param, labels: Sequence[str], limit: int) -> dict[str, Any]:
    if p.kind == "string":
        return {"type": "string", "minLength": p.min_length, "maxLength": limit}
    if p.kind == "integer":
        return {"type": "integer", "minimum": 0, "maximum": p.maximum}
    if p.kind == "boolean":
        return {"type": "boolean"}
    if p.kind == "date":
        return {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
    return {"type": "string", "enum": list(labels)}


def step_schema(labels: Sequence[str], max_chars: int | None = None,
                functions: Sequence[FunctionSpec] = FUNCTIONS) -> dict[str, Any]:
    """The JSON schema of one step: one alternative per function, arguments typed and bounded."""
    options = []
    for spec in functions:
        limits = bounds(spec, labels, max_chars)
        props = {p.name: _param_schema(p, labels, limits.get(p.name, 0)) for p in spec.all_params}
        options.append({
            "type": "object",
            "properties": {
                "thoughts": {"type": "string", "minLength": 1, "maxLength": limits["thoughts"]},
                "function": {"const": spec.name},
                "arguments": {"type": "object", "properties": props, "required": list(props),
                              "additionalProperties": False},
            },
            "required": ["thoughts", "function", "arguments"],
            "additionalProperties": False,
        })
    return options[0] if len(options) == 1 else {"oneOf": options}


def step_tools(labels: Sequence[str], max_chars: int | None = None,
               functions: Sequence[FunctionSpec] = FUNCTIONS) -> tuple[Tool, ...]:
    """The functions as native tools, described as the system prompt describes them: each takes
    ``inner_thoughts`` first (the private monologue, for models that cannot write text and a call together), then
    its typed, bounded arguments."""
    tools = []
    for spec in functions:
        limits = bounds(spec, labels, max_chars)
        props = {"inner_thoughts": {"type": "string", "description": "your private inner monologue, at most "
                                    f"{limits['thoughts']} characters; the user never sees it"},
                 **{p.name: _param_schema(p, labels, limits.get(p.name, 0)) for p in spec.all_params}}
        tools.append(Tool(spec.name, spec.description,
                          {"type": "object", "properties": props, "required": list(props),
                           "additionalProperties": False}))
    return tuple(tools)


def reply_text(response: LLMResponse) -> str:
    """The step reply to parse: a native tool call as the step's JSON form, else the text."""
    if not response.tool_calls:
        return response.text
    call = response.tool_calls[0]  # one call per step, as in MemGPT (later calls are ignored)
    return json.dumps({"thoughts": response.text.strip(), "function": call.name, "arguments": call.arguments})


# --- parsing ---------------------------------------------------------------------------------------
def first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (code fences and surrounding prose ignored)."""
    text = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _pick(obj: dict[str, Any], names: Sequence[str]) -> Any:
    for n in names:
        if n in obj:
            return obj[n]
    return None


def _coerce(p: Param, value: Any, fn: str) -> Any:
    bad = InvalidAction(f"Error parsing arguments of function '{fn}': {p.name} must be "
                        f"{'an integer' if p.kind == 'integer' else 'a boolean' if p.kind == 'boolean' else 'a string'}"
                        f", got {json.dumps(value)[:60]}")
    if p.kind == "integer":
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        if not 0 <= value <= p.maximum:
            raise InvalidAction(f"Error parsing arguments of function '{fn}': {p.name} must be between 0 and "
                                f"{p.maximum}, got {value}")
        return value
    if p.kind == "boolean":
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise bad
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise bad
    return value


def parse_action(text: str) -> Action:
    """Read and validate one step reply; raises :class:`InvalidAction` with a message for the processor."""
    obj = first_object(text)
    if obj is None:
        raise InvalidAction("Error: the reply was not a JSON object. Reply with exactly one JSON object: "
                            '{"thoughts": "...", "function": "<name>", "arguments": {...}}')
    fn: Any = _pick(obj, _FUNCTION)
    args: Any = _pick(obj, _ARGUMENTS)
    if isinstance(fn, dict):  # {"function": {"name": ..., "arguments": ...}} (OpenAI tool-call shape)
        fn, args = fn.get("name"), fn.get("arguments", args)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            raise InvalidAction(f"Error parsing JSON for function '{fn}' arguments: {args[:80]!r}") from None
    args = dict(args) if isinstance(args, dict) else {} if args is None else None
    if args is None:
        raise InvalidAction(f"Error: arguments of '{fn}' must be a JSON object")
    inner = args.pop("inner_thoughts", None)  # tool calls carry the monologue as an argument (Letta's kwargs form)
    thoughts = _pick(obj, _THOUGHTS) or inner or ""
    if not isinstance(fn, str) or fn not in SPECS:
        raise InvalidAction(f"No function named {fn!r}. Available: {', '.join(SPECS)}")
    spec = SPECS[fn]
    # a missing request_heartbeat counts as true: weak models forget it and a search nobody reads is wasted
    # (Letta added the same heuristic for local models, letta-ai/letta#601 / PR #621); an explicit false yields
    heartbeat = args.pop("request_heartbeat", True)
    heartbeat = False if spec.terminal else _coerce(Param("request_heartbeat", "boolean"), heartbeat, fn)
    names = [p.name for p in spec.params]
    unexpected = sorted(set(args) - set(names))
    missing = [n for n in names if n not in args]
    if unexpected or missing:
        detail = "; ".join(x for x in (f"unexpected {', '.join(unexpected)}" if unexpected else "",
                                       f"missing {', '.join(missing)}" if missing else "") if x)
        raise InvalidAction(f"Error parsing arguments of function '{fn}': {detail} (takes {', '.join(names)}"
                            f"{'' if spec.terminal else ', request_heartbeat'})")
    clean = {p.name: _coerce(p, args[p.name], fn) for p in spec.params}
    return Action(str(thoughts), fn, clean, bool(heartbeat))
