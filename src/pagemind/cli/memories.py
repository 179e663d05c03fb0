"""``pagemind memories`` (list, ``rm``) and ``pagemind cache clear``: what the store holds, visible and removable."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from .main_errors import handle_errors
from .options import llm_options, session


def _cost(usage: dict[str, Any] | None) -> str:
    if not usage:
        return "-"
    tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    cached = usage.get("cached_prompt_tokens", 0) + usage.get("cached_completion_tokens", 0)
    text = f"{tokens / 1000:.1f}k tok, {usage.get('calls', 0)} calls, {usage.get('seconds', 0):.0f}s"
    if cached:
        text += f" (+{cached / 1000:.1f}k cached)"
    return text + (" (resumed: at least)" if usage.get("resumed") else "")


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="every stored memory as JSON")
@llm_options
@click.pass_context
@handle_errors
def memories(ctx: click.Context, as_json: bool, encoding: str, **kw: Any) -> None:
    """List the stored memories: document, method, settings, model, status, size and build cost.

    \b
    pagemind memories
    pagemind memories rm 3f2a9c      # a key prefix, as listed
    pagemind cache clear             # the cached LLM replies
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {**(ctx.obj or {}), "kw": kw}
        return
    with session(ctx, kw) as pm:
        found = pm.store.list_memories()
    if as_json:
        click.echo(json.dumps([m.__dict__ for m in found], indent=2, default=str))
        return
    if not found:
        click.echo("no stored memories (pagemind index FILE builds one)")
        return
    for m in found:
        settings = ", ".join(f"{k}={v}" for k, v in m.settings.items() if not isinstance(v, dict))
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(m.updated))
        click.echo(f"{m.key[:12]}  {m.document_name or m.document_id[:12]} ({m.document_words:,} words)  "
                   f"{m.method}  {m.model}  {m.status}  {m.items} items, {m.bytes / 1024:.0f} KiB  "
                   f"{_cost(m.build_usage)}  {when}")
        if settings:
            click.echo(f"{'':14}{settings}")


@memories.command("rm")
@click.argument("keys", nargs=-1, required=True)
@click.pass_context
@handle_errors
def remove(ctx: click.Context, keys: tuple[str, ...]) -> None:
    """Delete the memories whose key starts with KEY (as `pagemind memories` lists them)."""
    kw = dict((ctx.obj or {}).get("kw", {}))
    with session(ctx, kw) as pm:
        stored = pm.store.list_memories()
        for prefix in keys:
            matches = [m for m in stored if m.key.startswith(prefix)]
            if len(matches) != 1:
                raise click.UsageError(f"{prefix!r} matches {len(matches)} memories; give a longer key prefix")
            pm.store.delete_memory(matches[0].key)
            click.echo(f"deleted {matches[0].key[:12]} ({matches[0].method} of {matches[0].document_name})")


@click.group()
def cache() -> None:
    """The cache of LLM replies (a repeated request costs no call)."""


@cache.command("clear")
@llm_options
@click.pass_context
@handle_errors
def clear(ctx: click.Context, encoding: str, **kw: Any) -> None:
    """Delete every cached LLM reply (with the prompts' kept token counts) and every file's kept reading (memories
    stay)."""
    with session(ctx, kw) as pm:
        n = pm.store.clear_responses()
        files = pm.store.forget_file_reads()
        pm.store.forget_token_counts()
    click.echo(f"deleted {n} cached repl{'y' if n == 1 else 'ies'} and {files} file reading{'' if files == 1 else 's'}")
