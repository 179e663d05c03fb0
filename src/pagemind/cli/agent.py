"""``pagemind chat`` (with a MemGPT agent, or with a document through any reader) and ``pagemind agent ...``
(agents kept in the store; registered in ``main``)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..agent import Agent, AgentNotFound, AgentOptions, SearchPage, TurnResult, load_into_agent, load_library_into_agent
from ..api import Pagemind
from ..declare import OptionSpec
from ..errors import ConfigError, InputError, LLMError
from ..limits import PASSAGE_WORDS
from ..methods import registry
from .main_errors import handle_errors
from .options import (
    SectionedCommand,
    SectionedOption,
    _flag,
    llm_options,
    method_options,
    session,
    split_method_options,
)
from .render import progress_view

AGENT_SECTION = "Agent (chat --agent)"
PARAM = "agent_{}"  # the click parameter of agent option X (its flag is the declaration's: --agent-window for
#                     context_window, since --context-window is the model's)


def _shown(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _agent_help(spec: OptionSpec) -> str:
    return f"{spec.help} [default {_shown(spec.default)}]"


def _agent_flags(skip: frozenset[str] = frozenset()) -> list[Callable]:
    """The CLI flags of the agent's options, generated from their declaration (:class:`AgentOptions`): one per
    option, ``--x/--no-x`` for a boolean, choices from its ``Literal`` type; unset flags mean "keep" (an existing
    agent's value, a new agent's default)."""
    params = []
    for spec in AgentOptions.specs():
        if spec.name in skip:
            continue
        extra: dict[str, Any] = {"is_flag": True} if spec.type is bool else {
            "type": click.Choice(spec.choices) if spec.choices else spec.type}
        params.append(click.option(*_flag(spec), PARAM.format(spec.name), default=None, help=_agent_help(spec),
                                   cls=SectionedOption, section=AGENT_SECTION, **extra))
    return params


def agent_options(fn: Callable) -> Callable:
    for decorator in reversed(_agent_flags()):
        fn = decorator(fn)
    return fn


def _method_flag_names() -> set[str]:
    return {spec.name for cls in registry.all_readers() for spec in cls.Options.specs()}


def chat_shared() -> frozenset[str]:
    """The agent options a method option of the same name stands for in ``pagemind chat`` (``--max-steps``,
    ``--embedder``, ``--constrained/--unconstrained``, ...): one flag, applied to the side the chat talks to."""
    return frozenset(spec.name for spec in AgentOptions.specs()) & frozenset(_method_flag_names())


def chat_options(fn: Callable) -> Callable:
    """The methods' flags (chat with a document) and the agent's (chat with an agent). Where both sides have an
    option of one name there is one flag (:func:`chat_shared`); another agent flag that a method flag would
    shadow is a declaration error."""
    fn = method_options(fn)
    shared = chat_shared()
    params: list[click.Option] = getattr(fn, "__click_params__", [])
    method_params = {p.name: p for p in params}
    taken = {opt for p in params for opt in (*p.opts, *p.secondary_opts)}
    for name in shared:
        param = method_params[name]
        param.help = f"{param.help}; chat --agent: {_agent_help(AgentOptions.spec(name))}"
        setattr(param, "section", "Method and agent")  # noqa: B010 - a SectionedOption's, or plain help
    for spec in AgentOptions.specs():
        flags = {o for decl in _flag(spec) for o in decl.split("/")}
        if spec.name not in shared and flags & taken:
            raise TypeError(f"agent option {spec.name}: its flag {', '.join(sorted(flags & taken))} is a method's")
    for decorator in reversed(_agent_flags(skip=shared)):
        fn = decorator(fn)
    return fn


def _agent_opts(kw: dict[str, Any], shared: dict[str, Any] | None = None) -> dict[str, Any]:
    """The agent options given on the command line (popped from ``kw``; ``shared``: the values of the method flags
    that stand for agent options), checked against their declaration, without the unset ones."""
    given = {spec.name: kw.pop(PARAM.format(spec.name), None) for spec in AgentOptions.specs()}
    given.update({k: v for k, v in (shared or {}).items() if v is not None})
    checked = {}
    for name, value in given.items():
        if value is None:
            continue
        try:
            checked[name] = AgentOptions.spec(name).coerce(value, AgentOptions.owner)
        except ConfigError as err:
            raise click.UsageError(f"{_flag(AgentOptions.spec(name))[0].split('/')[0]} for an agent: {err}") from None
    return checked


def _open(pm: Pagemind, name: str, create: bool = False, llm: bool = True, given: dict[str, Any] | None = None,
          **create_kw: Any) -> Agent:
    """Agent NAME (created with ``given`` options if ``create`` and it is new). Options given for an existing
    agent update its stored settings, and say so: a flag is never silently ignored."""
    given = given or {}
    try:
        agent = Agent.load(pm.llm if llm else None, pm.store, name)
    except AgentNotFound:
        if not create:
            raise
        agent = Agent.create(pm.llm if llm else None, pm.store, name, options=AgentOptions().updated(**given),
                             **create_kw)
        click.echo(f"created agent {name}", err=True)
        return agent
    changed = {k: v for k, v in given.items() if getattr(agent.options, k) != v}
    if changed:
        agent.update_options(changed)
        click.echo(f"agent {name}: options updated ({', '.join(f'{k}={v}' for k, v in changed.items())})", err=True)
    return agent


def print_turn(turn: TurnResult, trace: bool) -> None:
    """The messages to the user on stdout; with ``trace``, every step on stderr."""
    if trace:
        for i, s in enumerate(turn.steps, 1):
            click.echo(f"step {i} [{s.prompt_tokens} prompt tokens]", err=True)
            if not s.valid:
                click.echo(f"  invalid reply: {s.reply[:300]!r}", err=True)
            else:
                click.echo(f"  thinks: {s.thoughts}", err=True)
                args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in s.arguments.items())
                click.echo(f"  calls:  {s.function}({args})", err=True)
            click.echo(f"  result ({s.status}): {s.result[:500]}", err=True)
            if s.heartbeat:
                click.echo(f"  heartbeat: {s.heartbeat}", err=True)
        u = turn.usage
        click.echo(f"[{len(turn.steps)} steps, {u.calls} LLM calls, {u.prompt_tokens}+{u.completion_tokens} tokens, "
                   f"{turn.valid_actions}/{len(turn.steps)} valid actions, {turn.evictions} evictions, "
                   f"{turn.warnings} warnings, stop: {turn.stop_reason}]", err=True)
    for message in turn.messages:
        click.echo(message)
    if not turn.messages:
        click.echo(f"(no message to the user; stopped: {turn.stop_reason})", err=True)


def print_memory(agent: Agent) -> None:
    for block in agent.blocks():
        click.echo(block.render())
    counts = agent.counts()
    click.echo(f"recall: {counts['recall']} messages ({counts['in_context']} in context); "
               f"archival: {counts['archival']} passages")


# --- chat ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlashCommand:
    """A chat command: how to type it, one line of help, and what it does with the text after it (its
    ``run`` returns True to leave the chat)."""

    usage: str
    help: str
    run: Callable[[str], bool | None]


def command_list(commands: dict[str, SlashCommand]) -> str:
    width = max(len(c.usage) for c in commands.values())
    lines = [f"  {c.usage:<{width}}  {c.help}" for c in commands.values()]
    return "\n".join([*lines, f"  {'//TEXT':<{width}}  send TEXT beginning with '/' as a message"])


def chat_loop(commands: dict[str, SlashCommand], say: Callable[[str], None]) -> None:
    """Read lines until /exit or end of input: ``/name ...`` runs a command (never sent to the model), anything
    else goes to ``say``. An LLM failure ends the turn, not the chat."""
    while True:
        try:
            text = click.prompt("you", prompt_suffix="> ", default="", show_default=False).strip()
        except (click.Abort, EOFError):
            break
        if not text:
            continue
        if text.startswith("/") and not text.startswith("//"):
            name, _, rest = text.partition(" ")
            command = commands.get(ALIASES.get(name.lower(), name.lower()))
            if command is None:
                click.echo(f"unknown command {name}; the commands are:\n{command_list(commands)}", err=True)
            elif command.run(rest.strip()):
                break
            continue
        try:
            say(text[1:] if text.startswith("//") else text)
        except LLMError as err:
            click.echo(f"error: {err} (the chat goes on; /exit to leave)", err=True)


ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help"}


def _leave(_: str) -> bool:
    return True


def snippet(text: str, query: str, width: int = 240) -> str:
    """``text`` on one line, cut to about ``width`` characters around the first case-insensitive match of
    ``query``."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    at = text.lower().find(query.lower())
    start = 0 if at < width // 3 else at - width // 3
    cut = text[start:start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(text) else "")


def print_search(pages: dict[str, SearchPage], query: str) -> None:
    """The results of ``/search`` under the store each came from."""
    if all(page.total == 0 for page in pages.values()):
        click.echo(f"nothing found in recall or archival for {query!r}")
        return
    titles = {"recall": "recall (past messages)", "archival": "archival (saved facts and loaded documents)"}
    for store, page in pages.items():
        if page.total == 0:
            click.echo(f"{titles[store]}: nothing found")
            continue
        more = f", the first {len(page.items)} shown" if len(page.items) < page.total else ""
        click.echo(f"{titles[store]}: {page.total} result{'s' if page.total != 1 else ''}{more}")
        for item in page.items:
            click.echo(f"  [{store}] {snippet(item, query)}")


def _chat_with_agent(pm: Pagemind, name: str, given: dict[str, Any], trace: bool) -> None:
    agent = _open(pm, name, create=True, given=given)
    tracing = [trace]

    def search(query: str) -> None:
        if not query:
            click.echo("usage: /search TEXT", err=True)
        else:
            print_search(agent.search_memory(query), query)

    def toggle(_: str) -> None:
        tracing[0] = not tracing[0]
        click.echo(f"trace {'on' if tracing[0] else 'off'}", err=True)

    commands: dict[str, SlashCommand] = {}
    commands.update({
        "/help": SlashCommand("/help", "this list", lambda _: click.echo(command_list(commands))),
        "/memory": SlashCommand("/memory", "the core memory blocks and the recall and archival counts",
                                lambda _: print_memory(agent)),
        "/search": SlashCommand("/search TEXT", "search recall (past messages) and archival storage (saved facts, "
                                "loaded documents); results say which", search),
        "/trace": SlashCommand("/trace", "show or hide each step's thoughts, calls and results", toggle),
        "/exit": SlashCommand("/exit", "leave the chat (also /quit, Ctrl-D)", _leave),
    })
    click.echo(f"talking to {name} (/help for the commands)", err=True)

    def turn(text: str) -> None:  # recorded as a run with its steps (pagemind logs) unless record_runs is off
        with progress_view() as progress:  # each step as it starts, on a terminal: no silent minute
            done = pm.send(agent, text, progress=progress)
        print_turn(done, tracing[0])

    chat_loop(commands, turn)


_CHOICE_INLINE = re.compile(r"\s+(?=\([A-J]\)\s)")  # "Who? (A) x (B) y" typed on one line


def _chat_with_document(pm: Pagemind, file: str, method: str, opts: dict[str, Any], encoding: str,
                        trace: bool) -> None:
    from ..answering.question import Question
    from ..llm.usage import Trace
    from .render import print_answer, progress_bar, usage_line

    plan = pm.plan(file, method, encoding=encoding, **opts)  # a choice (auto) is made here, once
    source = plan.source
    if plan.said():
        click.echo(f"{plan.said()} (--method picks another)", err=True)
    build = Trace()
    with progress_bar(f"reading {source.name}") as progress:  # recorded as a run, like every question
        memory = pm.index(plan, progress=progress, trace=build)
    ready = f"built ({usage_line(build.usage)})" if build.events else "ready"
    click.echo(f"memory of {source.name} with {plan.method}: {ready}; ask questions, /help for the commands",
               err=True)
    tracing = [trace]
    pending_build = [build if build.events else None]  # shown with the first answer's trace

    def ask(text: str) -> None:
        answer = pm.ask(plan, Question.parse(_CHOICE_INLINE.sub("\n", text)), memory=memory)
        answer.index_trace, pending_build[0] = pending_build[0], None
        print_answer(answer, trace=tracing[0])

    def toggle(_: str) -> None:
        tracing[0] = not tracing[0]
        click.echo(f"trace {'on' if tracing[0] else 'off'}", err=True)

    def show_method(_: str) -> None:
        reader = plan.reader
        shown = plan.method if plan.method == reader.name else f"{plan.method} -> {reader.name}"
        click.echo(f"method: {shown} ({reader.about.summary})" + (f"; {plan.said()}" if plan.said() else ""))
        click.echo(f"options: {json.dumps(reader.options.as_dict(), default=str)}")
        click.echo(f"memory: {json.dumps(reader.describe(memory), default=str)}")

    commands: dict[str, SlashCommand] = {}
    commands.update({
        "/help": SlashCommand("/help", "this list; anything else you type is a question about the document "
                              "(multiple choice: Question? (A) one (B) two)",
                              lambda _: click.echo(command_list(commands))),
        "/method": SlashCommand("/method", "the method, its settings and the size of the memory", show_method),
        "/trace": SlashCommand("/trace", "show or hide the LLM calls of each answer", toggle),
        "/exit": SlashCommand("/exit", "leave the chat (also /quit, Ctrl-D)", _leave),
    })
    chat_loop(commands, ask)


@click.command(cls=SectionedCommand)
@click.argument("file", required=False)
@click.option("--agent", "name", help="talk to MemGPT agent NAME (created if new) [default without FILE: default]")
@click.option("--trace", is_flag=True, help="with an agent: thoughts, calls, results and heartbeats; with a "
                                           "document: every LLM call (/trace toggles it)")
@chat_options
@llm_options
@click.pass_context
@handle_errors
def chat(ctx: click.Context, file: str | None, name: str | None, trace: bool, encoding: str, **kw: Any) -> None:
    """Chat with the document FILE through any method (its memory is built once; every question reuses it), or
    without FILE with a MemGPT agent. /help lists the commands.

    \b
    pagemind chat book.txt                      # auto: the whole text if it fits, else ReadAgent-P
    pagemind chat book.txt -m memwalker --trace
    pagemind chat                               # the agent named "default"
    pagemind chat --agent ada --max-steps 4
    """
    if file and name:
        raise click.UsageError(f"give FILE (chat with a document) or --agent (chat with an agent), not both; to give "
                               f"an agent a document: pagemind agent load {name} {file}")
    shared = {n: kw.pop(n) for n in chat_shared() if n in kw}
    if file is None:
        method_source = ctx.get_parameter_source("method")
        if method_source not in (None, click.core.ParameterSource.DEFAULT):
            raise click.UsageError("--method applies to chat FILE (a document), not to an agent")
        for flag in sorted(_method_flag_names() - shared.keys()):
            if kw.pop(flag, None) is not None:
                raise click.UsageError(f"--{flag.replace('_', '-')} applies to chat FILE (a document), not to an "
                                       "agent")
        kw.pop("method", None)
        agent_given = _agent_opts(kw, shared)
        with session(ctx, kw) as pm:
            _chat_with_agent(pm, name or "default", agent_given, trace)
        return
    agent_given = _agent_opts(kw)
    if agent_given:
        flags = ", ".join(_flag(AgentOptions.spec(k))[0].split("/")[0] for k in agent_given)
        raise click.UsageError(f"{flags}: agent option(s), for chat --agent NAME, not for a document")
    from .main import source_tree

    method, opts = split_method_options({**kw, **shared}, "code" if source_tree(ctx, file) else None)
    with session(ctx, kw) as pm:
        _chat_with_document(pm, file, method, opts, encoding, trace)


@click.group()
def agent() -> None:
    """Create, inspect and talk to MemGPT agents (kept in the store; one per user, never shared)."""


@agent.command("create")
@click.argument("name")
@click.option("--persona",
              help="the agent's persona block [default: a short built-in persona that says its name is NAME]")
@click.option("--human", help="what the agent knows about its user [default: empty]")
@agent_options
@llm_options
@click.pass_context
@handle_errors
def create(ctx: click.Context, name: str, persona: str | None, human: str | None, encoding: str, **kw: Any) -> None:
    """Create agent NAME."""
    options = AgentOptions.create(**_agent_opts(kw))
    with session(ctx, kw) as pm:
        Agent.create(None, pm.store, name, persona=persona, human=human, options=options)
        click.echo(f"created agent {name}")


@agent.command("list")
@llm_options
@click.pass_context
@handle_errors
def list_(ctx: click.Context, encoding: str, **kw: Any) -> None:
    """Every agent with its message and passage counts."""
    with session(ctx, kw) as pm:
        from ..agent import AgentStore

        for record in AgentStore(pm.store).list_agents():
            counts = Agent(None, pm.store, record).counts()
            click.echo(f"{record.name}  recall {counts['recall']}  archival {counts['archival']}")


@agent.command("show")
@click.argument("name")
@click.option("--messages", "last", type=int, default=10, show_default=True, help="recent messages to print")
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def show(ctx: click.Context, name: str, last: int, as_json: bool, encoding: str, **kw: Any) -> None:
    """Core memory, counts, settings and recent messages of agent NAME."""
    with session(ctx, kw) as pm:
        a = _open(pm, name, llm=False)
        history = a.store.history(a.id, last)
        if as_json:
            click.echo(json.dumps({"name": a.name, "options": a.options.as_dict(), "state": a.state.__dict__,
                                   "counts": a.counts(), "blocks": [b.__dict__ for b in a.blocks()],
                                   "messages": [e.describe() for e in history]}, indent=2, ensure_ascii=False))
            return
        print_memory(a)
        click.echo(f"archival search: {a.archive.describe()}")
        click.echo(f"options: {json.dumps(a.options.as_dict())}")
        s = a.state
        click.echo(f"actions: {s.valid_actions} valid, {s.invalid_actions} invalid; evictions: {s.evictions} "
                   f"({s.evicted_messages} messages)")
        for event in history:
            click.echo(("  " if event.in_context else "- ") + event.describe()[:200])


@agent.command("say")
@click.argument("name")
@click.argument("text")
@click.option("--trace", is_flag=True, help="show inner monologue, calls, results and heartbeats")
@click.option("--json", "as_json", is_flag=True, help="print the whole turn as JSON")
@llm_options
@click.pass_context
@handle_errors
def say(ctx: click.Context, name: str, text: str, trace: bool, as_json: bool, encoding: str, **kw: Any) -> None:
    """Send TEXT to agent NAME and print its reply (recorded as a run with its steps: pagemind logs)."""
    with session(ctx, kw) as pm:
        with progress_view(enabled=not as_json) as progress:
            turn = pm.send(_open(pm, name), text, progress=progress)
        if as_json:
            click.echo(json.dumps(turn.as_dict(), indent=2, ensure_ascii=False))
        else:
            print_turn(turn, trace)


@agent.command("delete")
@click.argument("name")
@llm_options
@click.pass_context
@handle_errors
def delete(ctx: click.Context, name: str, encoding: str, **kw: Any) -> None:
    """Delete agent NAME with all its memory."""
    with session(ctx, kw) as pm:
        pm.delete_agent(name)
        click.echo(f"deleted agent {name}")


@agent.group("memory")
def memory() -> None:
    """An agent's memory: core memory's history (every write to a block is a version, shown, diffed and reverted
    here), its archival passages (listed, audited, forgotten and restored) and consolidation."""


def _when(seconds: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")


@memory.command("log")
@click.argument("name")
@click.argument("label", required=False)
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True, help="versions to show")
@click.option("--before", type=click.IntRange(1), help="versions older than this one (with LABEL: paging back)")
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def memory_log(ctx: click.Context, name: str, label: str | None, limit: int, before: int | None, as_json: bool,
               encoding: str, **kw: Any) -> None:
    """The versions of agent NAME's core memory (of block LABEL only), newest first, with their diffs."""
    from ..agent.memory import with_previous

    with session(ctx, kw) as pm:
        a = _open(pm, name, llm=False)
        versions = a.block_history(label, before=before, limit=limit)
        if label is not None and not versions and before is None:
            raise InputError(f"agent {name} has no block {label!r} (its blocks: "
                             f"{', '.join(b.label for b in a.blocks())})")
        paired = with_previous(versions)
        if as_json:
            click.echo(json.dumps([{"label": v.block.label, "version": v.version, "cause": v.cause, "time": v.time,
                                    "value": v.block.value, "limit": v.block.limit,
                                    "description": v.block.description} for v, _ in paired], indent=2,
                                  ensure_ascii=False))
            return
        for v, before_it in paired:
            click.echo(f"{v.block.label} v{v.version}  {_when(v.time)}  {v.cause}  "
                       f"({len(v.block.value)}/{v.block.limit} characters)")
            if before_it is not None or v.version == 1:
                for line in v.diff(before_it).splitlines()[2:]:  # the hunks, without the file header
                    click.echo(f"    {line}")


@memory.command("show")
@click.argument("name")
@click.argument("label")
@click.option("--at", "version", type=click.IntRange(1), help="the version [default: the block as it is now]")
@llm_options
@click.pass_context
@handle_errors
def memory_show(ctx: click.Context, name: str, label: str, version: int | None, encoding: str, **kw: Any) -> None:
    """Block LABEL of agent NAME as it is, or as version --at held it."""
    with session(ctx, kw) as pm:
        a = _open(pm, name, llm=False)
        if version is None:
            block = next((b for b in a.blocks() if b.label == label), None)
            if block is None:
                raise InputError(f"agent {name} has no block {label!r}")
            click.echo(block.value)
            return
        click.echo(a.block_version(label, version).block.value)


@memory.command("revert")
@click.argument("name")
@click.argument("label")
@click.argument("version", type=click.IntRange(1))
@llm_options
@click.pass_context
@handle_errors
def memory_revert(ctx: click.Context, name: str, label: str, version: int, encoding: str, **kw: Any) -> None:
    """Make block LABEL of agent NAME hold what VERSION held again (a new version: nothing is lost)."""
    with session(ctx, kw) as pm:
        block, number = _open(pm, name, llm=False).revert_block(label, version, cause="cli")
        click.echo(f"{label} is version {version}'s text again, as version {number} "
                   f"({len(block.value)}/{block.limit} characters)")


@memory.command("consolidate")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.option("--watch", is_flag=True, help="keep running (until Ctrl-C): a pass each time the agent has been idle "
                                            "--idle minutes since a new message")
@click.option("--idle", type=click.IntRange(1, 7 * 24 * 60), default=None,
              help="with --watch: minutes without a new message before a pass [default: the agent's "
                   "consolidate_idle option, else 10]")
@click.option("--every", type=click.FloatRange(min=0.05), default=60.0, show_default=True,
              help="with --watch: seconds between looks")
@llm_options
@click.pass_context
@handle_errors
def memory_consolidate(ctx: click.Context, name: str, as_json: bool, watch: bool, idle: int | None, every: float,
                       encoding: str, **kw: Any) -> None:
    """One consolidation pass of agent NAME over what it was told since the last pass (between sessions): a dated
    summary and lasting facts into archival memory, lines for the human block as a new version (revert to undo).
    Recorded as a run (`pagemind logs`). With --watch, a pass whenever the agent has been idle long enough, as
    `pagemind serve` does for agents whose consolidate_idle option is on."""
    from datetime import datetime

    from ..agent.idle import due

    with session(ctx, kw) as pm:
        agent = _open(pm, name)
        if not watch:
            _tell_consolidation(pm.consolidate(agent), name, as_json)
            return
        minutes = idle or agent.options.consolidate_idle or 10
        click.echo(f"watching {name}: a pass after {minutes} idle minute(s), looking every {every:g} s (Ctrl-C stops)",
                   err=True)
        tried: dict[int, int] = {}
        try:
            while True:
                row = pm.store.get_agent(name)
                if row is None:
                    raise AgentNotFound(f"agent {name!r} is gone")
                found = due(pm.store, row, datetime.now(), tried, minutes=minutes)
                if found is not None:
                    tried[row.id] = found.newest
                    _tell_consolidation(pm.consolidate(name), name, as_json)
                time.sleep(every)
        except KeyboardInterrupt:
            click.echo("stopped", err=True)


def _tell_consolidation(done: Any, name: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(done.as_dict(), indent=2))
        return
    click.echo(f"read {done.messages} messages in {done.windows} windows: stored {len(done.stored)} passages "
               f"({done.known} already known; left out: {done.junk} with nothing to tell, {done.ungrounded} "
               "the messages do not hold)")
    for label, version in done.versions:
        click.echo(f"  {label}: version {version} (undo: pagemind agent memory revert {name} {label} "
                   f"{version - 1})")
    for line in done.skipped:
        click.echo(f"  not added (over the block's limit): {line}")
    for problem in done.problems:
        click.echo(f"  stopped: {problem}")


@memory.command("audit")
@click.argument("name")
@click.option("--fold", is_flag=True, help="fold every repeat into the earliest passage of its group (its time and "
                                           "every source kept)")
@click.option("--drop-junk", is_flag=True, help="forget every junk passage (restore one with `agent memory "
                                                "restore`)")
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def memory_audit(ctx: click.Context, name: str, fold: bool, drop_junk: bool, as_json: bool, encoding: str,
                 **kw: Any) -> None:
    """Agent NAME's archival memory audited: repeated passages (exact and near), junk, superseded facts."""
    with session(ctx, kw) as pm:
        agent = _open(pm, name, llm=False)
        found, folded = agent.audit_memory(fold)
        dropped = agent.drop_junk(found) if drop_junk else 0
        report = found.as_dict()
        if as_json:
            click.echo(json.dumps({**report, "folded": folded, "dropped": dropped}, indent=2))
            return
        click.echo(f"{report['total']} passages: {report['repeats']} repeats ({report['repeat_share']:.1%}; "
                   f"{len(report['exact'])} exact groups, {len(report['near'])} near), {len(report['junk'])} junk "
                   f"({report['junk_share']:.1%}), {report['superseded']} superseded")
        for group in report["exact"] + report["near"]:
            click.echo(f"  repeats: {', '.join(map(str, group))} (kept: {group[0]})")
        for item in report["junk"]:
            click.echo(f"  junk {item['id']}: {item['why']}")
        if fold:
            click.echo(f"folded {folded} passages")
        elif report["repeats"]:
            click.echo("fold them with --fold")
        if drop_junk:
            click.echo(f"forgot {dropped} junk passages (pagemind agent memory forgotten {name})")
        elif report["junk"]:
            click.echo("forget them with --drop-junk")


@memory.command("passages")
@click.argument("name")
@click.option("-q", "--query", default="", help="the passages matching this, best first (the agent's own search)")
@click.option("--offset", type=click.IntRange(0), default=0)
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def memory_passages(ctx: click.Context, name: str, query: str, offset: int, limit: int, as_json: bool,
                    encoding: str, **kw: Any) -> None:
    """Agent NAME's archival passages with their ids: every one in order, or those matching --query best first."""
    with session(ctx, kw) as pm:
        total, found = _open(pm, name, llm=False).passages(query, offset, limit)
    if as_json:
        click.echo(json.dumps({"total": total, "passages": [
            {"id": p.id, "time": p.time, "source": p.source, "text": p.text, "superseded_by": p.superseded_by}
            for p in found]}, indent=2))
        return
    click.echo(f"{total} passages" + (f" match {query!r}" if query else "") +
               (f"; {offset + 1}-{offset + len(found)} shown" if found else ""))
    for p in found:
        replaced = f" (superseded by {p.superseded_by})" if p.superseded_by else ""
        click.echo(f"{p.id}\t{p.time}\t{p.text[:100]}{replaced}")


@memory.command("forget")
@click.argument("name")
@click.argument("passage", type=click.IntRange(1))
@click.option("--why", default="cli", show_default=True, help="the cause kept with the forgotten passage")
@llm_options
@click.pass_context
@handle_errors
def memory_forget(ctx: click.Context, name: str, passage: int, why: str, encoding: str, **kw: Any) -> None:
    """Take archival PASSAGE (its id, as `agent memory passages` shows it) out of agent NAME's memory: a wrong or
    junk fact nothing will find any more. It is kept apart with why and when; `agent memory restore` gives it
    back."""
    with session(ctx, kw) as pm:
        gone = _open(pm, name, llm=False).forget(passage, why)
        click.echo(f"forgot passage {passage}: {gone.text[:100]!r} (undo: pagemind agent memory restore {name} "
                   f"{passage})")


@memory.command("restore")
@click.argument("name")
@click.argument("passage", type=click.IntRange(1))
@llm_options
@click.pass_context
@handle_errors
def memory_restore(ctx: click.Context, name: str, passage: int, encoding: str, **kw: Any) -> None:
    """Give forgotten PASSAGE back to agent NAME's archival memory under its own id."""
    with session(ctx, kw) as pm:
        back = _open(pm, name, llm=False).restore(passage)
        click.echo(f"restored passage {passage}: {back.text[:100]!r}")


@memory.command("forgotten")
@click.argument("name")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@llm_options
@click.pass_context
@handle_errors
def memory_forgotten(ctx: click.Context, name: str, limit: int, as_json: bool, encoding: str, **kw: Any) -> None:
    """The passages agent NAME was made to forget, the latest first: id, why, when and text."""
    with session(ctx, kw) as pm:
        rows = _open(pm, name, llm=False).forgotten(limit)
    if as_json:
        click.echo(json.dumps([{"id": i, "text": t, "cause": c, "forgotten": w} for i, t, c, w in rows], indent=2))
        return
    for passage_id, text, cause, when in rows:
        click.echo(f"{passage_id}\t{time.strftime('%Y-%m-%d %H:%M', time.localtime(when))}\t{cause}\t{text[:100]}")


@agent.command("export")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="write the file here [default: standard output]")
@llm_options
@click.pass_context
@handle_errors
def export(ctx: click.Context, name: str, output: str | None, encoding: str, **kw: Any) -> None:
    """Agent NAME as an Agent File (.af, Letta's format): blocks, system prompt, every message, and its options
    and archival passages in the file's `pagemind` extension.

    \b
    pagemind agent export sam -o sam.af
    """
    with session(ctx, kw) as pm:
        text = json.dumps(pm.export_agent(name), indent=2, ensure_ascii=False)
    if output is None:
        click.echo(text)
        return
    Path(output).write_text(text + "\n", encoding="utf-8")
    click.echo(f"exported agent {name} to {output}", err=True)


@agent.command("import-conversation")
@click.argument("name")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--consolidate", is_flag=True, help="then read it as the background pass does: dated summaries, facts "
                                                  "and human-block lines into memory (model calls; a run)")
@click.option("--conversation", "which", type=click.IntRange(1), default=1, show_default=True,
              help="a LoCoMo file's conversation to import (its samples in order)")
@llm_options
@click.pass_context
@handle_errors
def import_conversation(ctx: click.Context, name: str, file: str, consolidate: bool, which: int, encoding: str,
                        **kw: Any) -> None:
    """Put a conversation held elsewhere into agent NAME's recall (made when new): a JSON list or JSON Lines of
    messages (role, content; optionally time, speaker, where), Letta's message list, or a LoCoMo file. Each
    speaker's messages stay theirs (never the agent's own replies) and are cited as theirs; --consolidate turns the
    history into dated summaries and facts without a turn per message.

    \b
    pagemind agent import-conversation sam chat.jsonl --consolidate
    pagemind agent import-conversation nora locomo10.json --conversation 2
    """
    from ..agent.conversations import read_conversation

    data = Path(file).read_bytes()
    with session(ctx, kw) as pm:
        agent = _open(pm, name, create=True, llm=consolidate)
        said = _locomo(data, which) or read_conversation(data, agent.now())
        stored, done = pm.import_conversation(agent, said, consolidate=consolidate)
        speakers = sorted({s.speaker for s in said if s.speaker})
        click.echo(f"{name}: {len(said)} messages imported ({stored} events in recall"
                   + (f"; speakers {', '.join(speakers)}" if speakers else "") + ")")
        if done is not None:
            _tell_consolidation(done, name, False)


def _locomo(data: bytes, which: int) -> list[Any] | None:
    """A LoCoMo file's conversation ``which`` as messages, each speaker's kept as theirs; None for another file."""
    from ..agent.conversations import Said
    from ..eval.sets_dialogue import locomo_turns

    try:
        rows = json.loads(data)
    except ValueError:
        return None
    rows = rows if isinstance(rows, list) else [rows]
    samples = [r.get("conversation", r) for r in rows if isinstance(r, dict)]
    if not samples or not all(isinstance(s, dict) and "speaker_a" in s for s in samples):
        return None
    if which > len(samples):
        raise InputError(f"the file holds {len(samples)} conversation(s), not {which}")
    turns, _ = locomo_turns(samples[which - 1], f"conversation {which}")
    return [Said("user", t.text, t.time, t.where, t.speaker) for t in turns if t.text]


@agent.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="the new agent's name (a file of one agent) [default: the name in the file]")
@click.option("--skip-unsupported", is_flag=True,
              help="import what has a pagemind counterpart and leave out the rest (tools with code, groups, ...)")
@llm_options
@click.pass_context
@handle_errors
def import_(ctx: click.Context, file: str, name: str | None, skip_unsupported: bool, encoding: str,
            **kw: Any) -> None:
    """Import the agents of an Agent File (.af): a pagemind export (lossless) or one of Letta's. What pagemind has
    no counterpart for is refused by name unless --skip-unsupported.

    \b
    pagemind agent import sam.af --name sam2
    pagemind agent import memgpt_agent.af
    """
    with session(ctx, kw) as pm:
        for plan in pm.import_agent(Path(file).read_bytes(), name=name, skip_unsupported=skip_unsupported):
            click.echo(f"imported agent {plan.name}: {len(plan.blocks)} blocks, {len(plan.events)} messages, "
                       f"{len(plan.passages)} passages")
            for what in plan.dropped:
                click.echo(f"  left out: {what}")
            for what in plan.notes:
                click.echo(f"  not kept: {what}")


@agent.command("load")
@click.argument("name")
@click.argument("file")
@click.option("--words", type=click.IntRange(*PASSAGE_WORDS), default=300, show_default=True,
              help="words per passage")
@click.option("--gists", is_flag=True, help="ReadAgent pages as passages, their gists as summaries (LLM calls)")
@llm_options
@click.pass_context
@handle_errors
def load(ctx: click.Context, name: str, file: str, words: int, gists: bool, encoding: str, **kw: Any) -> None:
    """Insert FILE into the archival storage of agent NAME, in passages. FILE may be a folder of documents or a
    library's name (`pagemind add`): every document, each passage with its document's name as its source.

    \b
    pagemind agent load sam book.txt
    pagemind agent load sam reports          # a library: the agent searches across its documents
    """
    from ..library import Library
    from ..methods.full import FullText

    with session(ctx, kw) as pm:
        a = _open(pm, name, llm=gists)
        source = pm.source(file, FullText, encoding)  # a document, a folder of documents, or a library
        done = (load_library_into_agent(a, source, words=words, gists=gists) if isinstance(source, Library)
                else [load_into_agent(a, source, words=words, gists=gists)])
        for loaded in done:
            click.echo(f"loaded {loaded.name}: {loaded.words} words in {loaded.passages} passages"
                       f"{' with gists' if gists else ''}")
