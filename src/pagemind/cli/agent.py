"""``pagemind chat`` and ``pagemind agent ...``: MemGPT agents kept in the store (registered in ``main``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from ..agent import Agent, AgentNotFound, AgentOptions, TurnResult, load_into_agent
from ..api import Pagemind
from .main_errors import handle_errors
from .options import llm_options, session


def agent_options(fn: Callable) -> Callable:
    for option in reversed([
        click.option("--agent-window", type=int,
                     help="tokens of the agent's main context (its virtual context) [default: min(model, 8192)]"),
        click.option("--max-steps", type=int, help="LLM steps per user message [default 8]"),
        click.option("--final-reply/--no-final-reply", default=None,
                     help="the last of --max-steps may only call send_message, so a long turn still answers "
                          "[default on]"),
        click.option("--archival-search", type=click.Choice(["hybrid", "semantic", "text"]),
                     help="archival search: exact text matches then embeddings (hybrid, default), or one of them"),
        click.option("--recall-search", type=click.Choice(["hybrid", "text"]),
                     help="conversation search: substring then keyword matches (hybrid, default) or substring only"),
        click.option("--embedder", type=click.Choice(["auto", "minilm", "hashing", "none"]),
                     help="archival embeddings [default auto: MiniLM if installed, else keyword ranking]"),
        click.option("--block-limit", type=int, help="characters per core-memory block [default 2000]"),
        click.option("--page-size", type=int, help="search results per page [default 5]"),
        click.option("--unconstrained", is_flag=True, help="do not enforce the step format with a grammar"),
        click.option("--tool-calling", type=click.Choice(["auto", "native", "json"]),
                     help="steps as native tool calls where the server has them (auto, default), always (native), "
                          "or as JSON replies constrained by grammar / schema (json)"),
    ]):
        fn = option(fn)
    return fn


def _agent_opts(kw: dict[str, Any]) -> dict[str, Any]:
    """The agent options given on the command line (popped from ``kw``), without the unset ones."""
    names = ("max_steps", "final_reply", "archival_search", "recall_search", "embedder",
             "block_limit", "page_size", "tool_calling")
    given = {n: kw.pop(n) for n in names}
    given["context_window"] = kw.pop("agent_window")  # --context-window is the model's (server's) window
    if kw.pop("unconstrained"):
        given["constrained"] = False
    return {k: v for k, v in given.items() if v is not None}


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
        agent.store.save_options(agent.id, agent.options.updated(**changed))
        agent = Agent.load(pm.llm if llm else None, pm.store, name)
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


@click.command()
@click.option("--agent", "name", default="default", show_default=True, help="agent to talk to (created if new)")
@click.option("--trace", is_flag=True, help="show inner monologue, calls, results and heartbeats")
@agent_options
@llm_options
@click.pass_context
@handle_errors
def chat(ctx: click.Context, name: str, trace: bool, encoding: str, **kw: Any) -> None:
    """Talk with a MemGPT agent. Commands: /memory, /search QUERY, /exit."""
    given = _agent_opts(kw)
    with session(ctx, kw) as pm:
        agent = _open(pm, name, create=True, given=given)
        click.echo(f"talking to {name} (/memory, /search QUERY, /exit)", err=True)
        while True:
            try:
                text = click.prompt("you", prompt_suffix="> ", default="", show_default=False).strip()
            except (click.Abort, EOFError):
                break
            if not text:
                continue
            if text in ("/exit", "/quit"):
                break
            if text == "/memory":
                print_memory(agent)
            elif text.startswith("/search"):
                query = text[len("/search"):].strip()
                click.echo(agent.search(query) if query else "usage: /search QUERY")
            else:
                print_turn(agent.say(text), trace)


@click.group()
def agent() -> None:
    """Create, inspect and talk to MemGPT agents (kept in the store; one per user, never shared)."""


@agent.command("create")
@click.argument("name")
@click.option("--persona", help="the agent's persona block [default: a short built-in persona]")
@click.option("--human", help="what the agent knows about its user [default: empty]")
@agent_options
@llm_options
@click.pass_context
@handle_errors
def create(ctx: click.Context, name: str, persona: str | None, human: str | None, encoding: str, **kw: Any) -> None:
    """Create agent NAME."""
    options = AgentOptions().updated(**_agent_opts(kw))
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
    """Send TEXT to agent NAME and print its reply."""
    with session(ctx, kw) as pm:
        turn = _open(pm, name).say(text)
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
        from ..agent import AgentStore

        AgentStore(pm.store).delete_agent(name)
        click.echo(f"deleted agent {name}")


@agent.command("load")
@click.argument("name")
@click.argument("file")
@click.option("--words", type=int, default=300, show_default=True, help="words per passage")
@click.option("--gists", is_flag=True, help="ReadAgent pages as passages, their gists as summaries (LLM calls)")
@llm_options
@click.pass_context
@handle_errors
def load(ctx: click.Context, name: str, file: str, words: int, gists: bool, encoding: str, **kw: Any) -> None:
    """Insert FILE into the archival storage of agent NAME, in passages."""
    with session(ctx, kw) as pm:
        a = _open(pm, name, llm=gists)
        loaded = load_into_agent(a, pm.document(file, encoding=encoding), words=words, gists=gists)
        click.echo(f"loaded {loaded.name}: {loaded.words} words in {loaded.passages} passages"
                   f"{' with gists' if gists else ''}")
